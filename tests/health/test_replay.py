"""Replay against the stateful fake: the seven scenarios of the fake's spec and the R rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .conftest import ForgeEnv, git_status, wait_until

NO_AUTO = {"FORGE_REPLAY": "0"}


def spool_three(env: ForgeEnv) -> None:
    """Scenario 1's outage: a create, a comment on #1 and a close of #1, all hit by a 503."""
    env.fake.seed("first")
    env.fake.fail("issue *", "503", times=3)
    for argv in (
        ["issue", "create", "--title", "todo", "--body", "todo body"],
        ["issue", "comment", "1", "--body", "progress"],
        ["issue", "close", "1"],
    ):
        result = env.gh(*argv, env=NO_AUTO)
        assert result.returncode == 0, result.stderr
        assert b"[forge-queue] not delivered yet" in result.stderr


def replay_log(env: ForgeEnv) -> list[list[str]]:
    path = env.queue_dir() / "replay.log"
    return [line.split("\t") for line in path.read_text().splitlines()] if path.exists() else []


def delivery_calls(env: ForgeEnv) -> list[list[str]]:
    """The fake's log minus verification reads and the triggering call."""
    return [
        a
        for a in env.fake.argvs()
        if a[:2]
        in (["issue", "create"], ["issue", "comment"], ["issue", "close"], ["issue", "reopen"])
    ]


def test_scenario1_r01_r02_r05_the_first_success_drains_in_seq_order(forge_env: ForgeEnv) -> None:
    spool_three(forge_env)
    breadcrumb = forge_env.state_dir / "replay-pending"
    assert breadcrumb.exists()
    assert forge_env.gh("issue", "list").returncode == 0
    wait_until(lambda: not breadcrumb.exists())
    issues = forge_env.fake.issues()
    assert [i["title"] for i in issues.values()] == ["first", "todo"]
    assert issues["1"]["state"] == "CLOSED"
    assert [c["body"] for c in issues["1"]["comments"]] == ["progress"]
    delivered = [a[:2] for a in delivery_calls(forge_env)[3:]]
    assert delivered == [["issue", "create"], ["issue", "comment"], ["issue", "close"]]
    assert forge_env.forge("queue").returncode == 0


def test_r02_no_breadcrumb_no_engine(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed("first")
    forge_env.gh("issue", "list")
    assert not (forge_env.state_dir / "replay-pending").exists()
    assert forge_env.fake.argvs() == [["issue", "list"]]


def test_scenario2_r06_landed_then_failed_is_not_delivered_twice(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue comment*", "503", phase="after")
    forge_env.fake.fail("issue create*", "503", phase="after")
    forge_env.fake.fail("issue close*", "503", phase="after")
    forge_env.gh("issue", "comment", "1", "--body", "once", env=NO_AUTO)
    forge_env.gh("issue", "create", "--title", "t", "--body", "only one", env=NO_AUTO)
    forge_env.gh("issue", "close", "1", env=NO_AUTO)
    result = forge_env.forge("queue", "replay", "--apply")
    assert result.returncode == 0, result.stdout
    issues = forge_env.fake.issues()
    assert [c["body"] for c in issues["1"]["comments"]] == ["once"]
    assert [i["body"] for i in issues.values()].count("only one") == 1
    assert issues["1"]["state"] == "CLOSED"
    assert [row[3] for row in replay_log(forge_env)] == ["delivered"] * 3
    assert all("already landed" in row[4] for row in replay_log(forge_env))


def test_scenario3_r14_a_comment_on_a_handle_lands_on_the_real_issue(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue create*", "503")
    handle = forge_env.gh("issue", "create", "--title", "t", "--body", "b", env=NO_AUTO)
    ref = handle.stdout.decode().strip().rsplit("/", 1)[1]
    comment = forge_env.gh("issue", "comment", ref, "--body", "follow-up", env=NO_AUTO)
    assert comment.returncode == 0
    assert forge_env.forge("queue", "replay", "--apply").returncode == 0
    assert [c["body"] for c in forge_env.fake.issues()["2"]["comments"]] == ["follow-up"]
    handles = json.loads((forge_env.queue_dir() / "handles.json").read_text())
    assert handles == {"FORGE-Q1": 2}
    later = forge_env.gh("issue", "comment", ref, "--body", "live now")
    assert later.returncode == 0
    assert forge_env.fake.argvs()[-1][:3] == ["issue", "comment", "2"]


def test_scenario4_r09_a_deleted_target_is_set_aside_and_the_rest_continue(
    forge_env: ForgeEnv,
) -> None:
    forge_env.fake.seed("first", "second")
    forge_env.fake.fail("issue *", "503", times=2)
    forge_env.gh("issue", "comment", "1", "--body", "on a doomed issue", env=NO_AUTO)
    forge_env.gh("issue", "comment", "2", "--body", "fine", env=NO_AUTO)
    forge_env.gh("issue", "delete", "1", env=NO_AUTO)
    result = forge_env.forge("queue", "replay", "--apply")
    assert result.returncode == 3
    assert "set aside q000001" in result.stdout
    assert [c["body"] for c in forge_env.fake.issues()["2"]["comments"]] == ["fine"]
    entry = json.loads((forge_env.queue_dir() / "000001.json").read_text())
    assert (entry["status"], entry["reason"].startswith("not found")) == ("set_aside", True)
    status = forge_env.forge("queue")
    assert status.returncode == 3
    assert "set aside q000001 (comment): not found" in status.stdout
    health = forge_env.forge("health", "--no-probe").stdout
    assert "set aside q000001 (comment) in " in health
    assert "not found: the target is gone" in health


def test_scenario5_r08_the_forge_still_down_stops_everything(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=3)
    for n in range(3):
        forge_env.gh("issue", "comment", "1", "--body", f"c{n}", env=NO_AUTO)
    forge_env.fake.fail("issue comment * *000002.d/body.md*", "503")  # the 2nd delivery
    result = forge_env.forge("queue", "replay", "--apply")
    assert result.returncode == 3
    assert "1 delivered" in result.stdout
    assert "stopped at q000002" in result.stdout
    entries = [json.loads(p.read_text()) for p in sorted((forge_env.queue_dir()).glob("0*.json"))]
    assert [(e["seq"], e["attempts"], e["status"]) for e in entries] == [
        (2, 0, "pending"),
        (3, 0, "pending"),
    ]
    assert forge_env.forge("queue", "replay", "--apply").returncode == 0


def test_scenario6_r16_concurrent_drains_deliver_each_entry_once(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=4)
    for n in range(4):
        forge_env.gh("issue", "comment", "1", "--body", f"c{n}", env=NO_AUTO)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "forge.cli", "queue", "replay", "--apply"],
            env=forge_env.env,
            cwd=forge_env.project,
            stdout=subprocess.DEVNULL,
        )
        for _ in range(2)
    ]
    [p.wait(timeout=60) for p in procs]
    while forge_env.forge("queue").returncode != 0:
        assert forge_env.forge("queue", "replay", "--apply").returncode in (0, 3)
    bodies = [c["body"] for c in forge_env.fake.issues()["1"]["comments"]]
    assert bodies == ["c0", "c1", "c2", "c3"]


def test_scenario7_q12_the_bound(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=-1)
    env = {**NO_AUTO, "FORGE_QUEUE_MAX": "2"}
    rcs = [
        forge_env.gh("issue", "comment", "1", "--body", str(n), env=env).returncode
        for n in range(3)
    ]
    assert rcs == [0, 0, 1]


def test_r03_r04_replay_bypasses_the_shim_and_records_each_call(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue comment*", "503", times=2)
    forge_env.gh("issue", "comment", "1", "--body", "x", env=NO_AUTO)
    before = len(forge_env.observations())
    result = forge_env.forge("queue", "replay", "--apply")
    assert result.returncode == 3
    assert len(list((forge_env.queue_dir()).glob("0*.json"))) == 1
    rows = forge_env.observations()[before:]
    assert [row[3:] for row in rows] == [["ok", "issue view"], ["server", "issue comment"]]


def test_r06_two_identical_comments_both_land(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=2)
    forge_env.gh("issue", "comment", "1", "--body", "+1", env=NO_AUTO)
    forge_env.gh("issue", "comment", "1", "--body", "+1", env=NO_AUTO)
    assert forge_env.forge("queue", "replay", "--apply").returncode == 0
    assert [c["body"] for c in forge_env.fake.issues()["1"]["comments"]] == ["+1", "+1"]


def test_r07_r10_edit_and_attempts(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=1)
    forge_env.gh("issue", "edit", "1", "--add-label", "bug", env=NO_AUTO)
    forge_env.fake.fail("issue edit*", "422", times=2)
    env = {"FORGE_QUEUE_ATTEMPTS": "2"}
    first = forge_env.forge("queue", "replay", "--apply", env=env)
    assert (first.returncode, "will retry" in first.stdout) == (3, True)
    second = forge_env.forge("queue", "replay", "--apply", env=env)
    assert "attempts exhausted (2): HTTP 422" in second.stdout
    assert forge_env.fake.issues()["1"]["labels"] == []


def test_r11_r13_batches_and_the_dry_run(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=3)
    for n in range(3):
        forge_env.gh("issue", "comment", "1", "--body", f"c{n}", env=NO_AUTO)
    calls = len(forge_env.fake.calls())
    dry = forge_env.forge("queue", "replay")
    assert dry.returncode == 3
    assert "3 entries would be attempted" in dry.stdout
    assert len(forge_env.fake.calls()) == calls
    batch = forge_env.forge("queue", "replay", "--apply", "--batch", "2")
    assert batch.returncode == 3
    assert len(forge_env.fake.issues()["1"]["comments"]) == 2
    assert forge_env.forge("queue", "replay", "--apply").returncode == 0


def test_r11_r12_automatic_replay_batch_and_switch(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=3)
    for n in range(3):
        forge_env.gh("issue", "comment", "1", "--body", f"c{n}", env=NO_AUTO)
    forge_env.gh("issue", "view", "1", env=NO_AUTO)
    assert forge_env.fake.issues()["1"]["comments"] == []
    log = forge_env.queue_dir() / "replay.log"
    forge_env.gh("issue", "view", "1", env={"FORGE_QUEUE_BATCH": "2"})
    wait_until(lambda: log.exists() and len(log.read_text().splitlines()) == 2)
    assert len(forge_env.fake.issues()["1"]["comments"]) == 2


def test_r15_replay_log_columns(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=1)
    forge_env.gh("issue", "reopen", "1", env=NO_AUTO)
    assert forge_env.forge("queue", "replay", "--apply").returncode == 0
    [row] = replay_log(forge_env)
    assert (len(row), row[1:4]) == (5, ["1", "reopen", "delivered"])
    assert row[0].isdigit()


def test_service_status_reads_without_probing(forge_env: ForgeEnv) -> None:
    spool_three(forge_env)
    code = (
        "import json; from forge.health.service import service_status; "
        "print(json.dumps(service_status()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=forge_env.env,
        cwd=Path("/"),
        capture_output=True,
        text=True,
        check=True,
    )
    status = json.loads(out.stdout)
    assert set(status) == {"state", "reason", "sample", "cache", "queue"}
    assert status["state"] == "degraded"
    assert status["queue"]["pending"] == 3
    assert "api" not in {a[0] for a in forge_env.fake.argvs()}


def test_r17_automatic_replay_is_detached_from_the_triggering_call(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=1)
    forge_env.gh("issue", "comment", "1", "--body", "slow", env=NO_AUTO)
    forge_env.fake.fail("issue view 1 --json comments*", "503", phase="after", delay=3)
    log = forge_env.queue_dir() / "replay.log"
    trigger = forge_env.gh("api", "rate_limit")
    assert trigger.returncode == 0
    assert not log.exists()  # the triggering call returned while the replay was still reading
    wait_until(log.exists)
    assert "stopped" in log.read_text()


def test_service_status_is_stable_while_nothing_changes(forge_env: ForgeEnv) -> None:
    spool_three(forge_env)
    code = (
        "import json; from forge.health.service import service_status; "
        "print(json.dumps([service_status(), service_status({**__import__('os').environ, "
        "'FORGE_NOW_MS': str(int(__import__('time').time() * 1000) + 5000)})]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=forge_env.env, capture_output=True, text=True, check=True
    )
    now, five_seconds_later = json.loads(out.stdout)
    assert now == five_seconds_later
    [project] = now["queue"]["projects"]
    assert project["unresolved_handles"] == ["FORGE-Q1"]


def test_issue13_item1_a_corrupt_entry_is_listed_kept_and_blocks_its_dependents(
    forge_env: ForgeEnv,
) -> None:
    """Issue 13 item 1: a truncated create and a garbage close are listed as corrupt (slot, file,
    what is wrong), make `forge queue` exit non-zero, are moved aside but never deleted, and the
    comment on the corrupt create's handle is blocked with that reason, not "never landed"."""
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=-1)
    for argv in (
        ["issue", "create", "--title", "todo", "--body", "todo body"],
        ["issue", "comment", "FORGE-Q1", "--body", "on the new one"],
        ["issue", "close", "1"],
        ["issue", "comment", "1", "--body", "fine"],
    ):
        assert forge_env.gh(*argv, env=NO_AUTO).returncode == 0
    queue = forge_env.queue_dir()
    create = (queue / "000001.json").read_bytes()
    truncated = create[: len(create) // 2]
    (queue / "000001.json").write_bytes(truncated)
    (queue / "000003.json").write_bytes(b"\x00\xffnot json at all")

    status = forge_env.forge("queue")
    assert status.returncode == 3
    assert f"corrupt q000001 ({queue / '000001.json'}): " in status.stdout
    assert "truncated" in status.stdout
    assert f"corrupt q000003 ({queue / '000003.json'}): " in status.stdout
    assert "malformed" in status.stdout
    summary = json.loads(forge_env.forge("queue", "--json").stdout)
    assert [c["entry"] for c in summary["corrupt_entries"]] == ["q000001", "q000003"]
    assert summary["crashed_slots"] == []
    shown = forge_env.forge("queue", "show", "1")
    assert shown.returncode == 3
    assert "no queue entry" not in shown.stderr
    assert json.loads(shown.stdout)["corrupt"] is True
    assert json.loads(shown.stdout)["body"] == "todo body"  # what a person needs to recover it
    assert "q000001" in forge_env.forge("queue", "list").stdout

    forge_env.fake.clear_faults()
    replayed = forge_env.forge("queue", "replay", "--apply")
    assert replayed.returncode == 3
    assert "corrupt q000001" in replayed.stdout
    issues = forge_env.fake.issues()
    assert list(issues) == ["1"]  # the corrupt create was never attempted
    assert issues["1"]["state"] == "OPEN"  # nor the corrupt close
    assert [c["body"] for c in issues["1"]["comments"]] == ["fine"]
    dependent = json.loads((queue / "000002.json").read_text())
    assert dependent["status"] == "set_aside"
    assert "corrupt entry q000001" in dependent["reason"]
    assert "never landed" not in dependent["reason"]
    assert not (queue / "000001.json").exists()
    assert (queue / "000001.json.corrupt").read_bytes() == truncated
    assert (queue / "000003.json.corrupt").read_bytes() == b"\x00\xffnot json at all"
    assert (queue / "000001.d" / "body.md").read_bytes() == b"todo body"
    assert [(row[1], row[3]) for row in replay_log(forge_env) if row[3] == "corrupt"] == [
        ("1", "corrupt"),
        ("3", "corrupt"),
    ]

    after = forge_env.forge("queue", "--json")
    assert after.returncode == 3
    summary = json.loads(after.stdout)
    assert [c["entry"] for c in summary["corrupt_entries"]] == ["q000001", "q000003"]
    assert summary["corrupt_entries"][0]["file"] == str(queue / "000001.json.corrupt")
    assert summary["crashed_slots"] == []
    assert "2 corrupt" in forge_env.forge("health", "--no-probe").stdout
    assert forge_env.forge("queue", "replay", "--apply").returncode == 3
    assert [c["body"] for c in forge_env.fake.issues()["1"]["comments"]] == ["fine"]


def test_issue13_item17_replay_on_an_empty_queue_leaves_the_project_clean(
    forge_env: ForgeEnv,
) -> None:
    """Issue 13 item 17: `forge queue replay --apply` with nothing spooled must not leave a
    `.forge/` without its `.gitignore` behind (the project would look dirty)."""
    result = forge_env.forge("queue", "replay", "--apply")
    assert result.returncode == 0, result.stderr
    assert git_status(forge_env.project) == ""


def test_issue13_item17_the_dry_run_prints_copyable_shell_quoted_argv(forge_env: ForgeEnv) -> None:
    """Issue 13 item 17: the dry run's command lines are shell-quoted, so they can be pasted."""
    import shlex

    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503")
    forge_env.gh("issue", "edit", "1", "--add-label", "needs triage", env=NO_AUTO)
    dry = forge_env.forge("queue", "replay")
    [line] = [line for line in dry.stdout.splitlines() if "q000001" in line]
    command = line.split(": ", 1)[1]
    assert shlex.split(command) == [
        "gh",
        "issue",
        "edit",
        "1",
        "--add-label",
        "needs triage",
        "-R",
        "acme/widget",
    ]
