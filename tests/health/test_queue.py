"""The write queue through a raw gh call: spooled on availability failures, never otherwise."""

from __future__ import annotations

import compileall
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import forge

from .conftest import ForgeEnv, git_status, make_project

MARKER = re.compile(
    r"^\[forge-queue\] not delivered yet — the live call failed \((net|server|ratelimit|auth)\)\. "
    r"Spooled as q(\d{6}); it replays in order when the forge recovers \(queue depth (\d+)\)\.$"
)


def queue_dir(env: ForgeEnv) -> Path:
    return env.queue_dir()


def entries(env: ForgeEnv) -> list[dict[str, object]]:
    return [
        json.loads(p.read_text())
        for p in sorted(queue_dir(env).glob("*.json"))
        if p.name[0].isdigit()
    ]


@pytest.fixture
def down(forge_env: ForgeEnv) -> ForgeEnv:
    """One open issue (#1), and every issue write failing with a 503."""
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=-1)
    return forge_env


def test_q09_q14_spooled_with_a_marker_and_rc_0(down: ForgeEnv) -> None:
    result = down.gh("issue", "comment", "1", "--body", "hello", env={"FORGE_REPLAY": "0"})
    assert result.returncode == 0
    match = MARKER.match(result.stderr.decode().strip())
    assert match is not None, result.stderr
    assert match.groups() == ("server", "000001", "1")
    [entry] = entries(down)
    assert {
        "kind",
        "repo",
        "target",
        "handle",
        "idempotency_key",
        "argv",
        "enqueued_at",
        "project",
        "attempts",
        "status",
        "live_stderr",
    } <= set(entry)
    assert (entry["kind"], entry["repo"], entry["target"]) == ("comment", "acme/widget", "1")
    assert (queue_dir(down) / "000001.seq").exists()
    assert (down.state_dir / "replay-pending").read_text() == f"{down.project}\n"


@pytest.mark.parametrize(
    ("how", "body"),
    [
        ("--body", b"crlf\r\nline"),
        ("--body-file", "no newline é".encode()),
        ("-", b"\xe2\x9c\x93\n"),
    ],
)
def test_q04_q05_bodies_are_byte_identical(down: ForgeEnv, how: str, body: bytes) -> None:
    stdin = b""
    if how == "--body":
        args = ["--body", body.decode()]
    elif how == "--body-file":
        path = down.root / "body.txt"
        path.write_bytes(body)
        args = ["--body-file", str(path)]
    else:
        args, stdin = ["--body-file", "-"], body
    assert down.gh("issue", "comment", "1", *args, stdin=stdin).returncode == 0
    live = down.fake.calls()[-1]
    import base64

    assert base64.b64decode(live["body_b64"]) == body  # the live call got the whole body
    stored = (queue_dir(down) / "000001.d" / "body.md").read_bytes()
    assert hashlib.sha256(stored).digest() == hashlib.sha256(body).digest()


@pytest.mark.parametrize("verb", ["delete", "transfer", "lock"])
def test_q02_destructive_writes_are_never_spooled(down: ForgeEnv, verb: str) -> None:
    result = down.gh("issue", verb, "1")
    assert result.returncode == 1
    assert b"HTTP 503" in result.stderr
    assert entries(down) == []


def test_q03_reads_are_never_spooled(down: ForgeEnv) -> None:
    assert down.gh("issue", "view", "1").returncode == 1
    assert entries(down) == []


@pytest.mark.parametrize("kind", ["404", "usage"])
def test_q11_404_and_usage_errors_are_not_spooled(forge_env: ForgeEnv, kind: str) -> None:
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue comment*", kind)
    result = forge_env.gh("issue", "comment", "1", "--body", "x")
    assert result.returncode == 1
    assert b"[forge-queue]" not in result.stderr
    assert not queue_dir(forge_env).exists() or entries(forge_env) == []


def test_q06_a_bare_create_is_left_alone(down: ForgeEnv) -> None:
    result = down.gh("issue", "create")
    assert result.returncode == 1
    assert entries(down) == []
    assert down.observations() == []


def test_q10_q08_a_queued_create_prints_its_handle_and_dependents_wait(down: ForgeEnv) -> None:
    created = down.gh("issue", "create", "--title", "todo", "--body", "b")
    assert created.returncode == 0
    url = created.stdout.decode().strip()
    assert url == "https://github.com/acme/widget/issues/FORGE-Q1"
    handle = url.rsplit("/", 1)[1]
    down.fake.clear_faults()
    calls = len(down.fake.calls())
    comment = down.gh("issue", "comment", handle, "--body", "see above")
    assert comment.returncode == 0
    assert b"waits for FORGE-Q1" in comment.stderr
    assert len(down.fake.calls()) == calls  # the forge was not called at all
    assert [(e["seq"], e["kind"], e["depends_on"]) for e in entries(down)] == [
        (1, "create", []),
        (2, "comment", ["FORGE-Q1"]),
    ]


def test_q07_a_resolved_handle_is_substituted_and_goes_live(forge_env: ForgeEnv) -> None:
    forge_env.fake.seed(*[f"i{n}" for n in range(7)])
    queue = queue_dir(forge_env)
    queue.mkdir(parents=True)
    (queue / "handles.json").write_text('{"FORGE-Q1": 7}')
    result = forge_env.gh("issue", "comment", "FORGE-Q1", "--body", "hi")
    assert result.returncode == 0, result.stderr
    assert forge_env.fake.argvs()[-1] == ["issue", "comment", "7", "--body", "hi"]


def test_q12_the_bound_refuses_loudly(down: ForgeEnv) -> None:
    bound = {"FORGE_QUEUE_MAX": "2"}
    for n in range(2):
        assert down.gh("issue", "comment", "1", "--body", str(n), env=bound).returncode == 0
    third = down.gh("issue", "comment", "1", "--body", "3", env=bound)
    assert third.returncode == 1
    assert b"HTTP 503" in third.stderr
    assert b"[forge-queue] NOT queued \xe2\x80\x94 spool full (2 pending)" in third.stderr
    assert len(entries(down)) == 2


def test_q13_disabled_entirely(down: ForgeEnv) -> None:
    result = down.gh("issue", "comment", "1", "--body", "x", env={"FORGE_QUEUE": "0"})
    assert result.returncode == 1
    assert not queue_dir(down).exists()


def test_q14_concurrent_enqueues_get_distinct_contiguous_seqs(down: ForgeEnv) -> None:
    script = "; ".join(f"{down.shim} issue comment 1 --body w{i} >/dev/null 2>&1" for i in range(5))
    procs = [
        subprocess.Popen(
            ["dash", "-c", script], env={**down.env, "FORGE_REPLAY": "0"}, cwd=down.project
        )
        for _ in range(4)
    ]
    assert [p.wait(timeout=100) for p in procs] == [0] * 4
    assert [e["seq"] for e in entries(down)] == list(range(1, 21))


def test_q14b_seq_numbers_are_never_reused(down: ForgeEnv) -> None:
    down.gh("issue", "comment", "1", "--body", "a", env={"FORGE_REPLAY": "0"})
    down.fake.clear_faults()
    assert down.forge("queue", "replay", "--apply").returncode == 0
    down.fake.fail("issue *", "503")
    result = down.gh("issue", "comment", "1", "--body", "b", env={"FORGE_REPLAY": "0"})
    assert b"Spooled as q000002" in result.stderr


def test_q15_q16_status_list_show_and_exit_codes(down: ForgeEnv) -> None:
    assert down.forge("queue").returncode == 0
    down.gh("issue", "create", "--title", "t", "--body", "the body", env={"FORGE_REPLAY": "0"})
    down.gh("issue", "close", "1", env={"FORGE_REPLAY": "0"})
    bare = down.forge("queue")
    assert bare.returncode == 3
    assert "2 pending (close 1, create 1)" in bare.stdout
    assert "unresolved handles: FORGE-Q1" in bare.stdout
    status = json.loads(down.forge("queue", "status", "--json").stdout)
    assert status["pending"] == 2
    listing = down.forge("queue", "list").stdout.splitlines()
    assert [line.split()[0] for line in listing] == ["q000001", "q000002"]
    shown = json.loads(down.forge("queue", "show", "1").stdout)
    assert shown["body"] == "the body"
    assert down.forge("queue", "show", "9").returncode == 2
    console = subprocess.run(
        [str(Path(sys.executable).parent / "forge-queue")],
        env=down.env,
        cwd=down.project,
        capture_output=True,
        check=False,
    )
    assert console.returncode == 3


def test_q14a_replay_from_another_directory_targets_the_spooled_repo(
    down: ForgeEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in down.env.items():
        monkeypatch.setenv(name, value)
    down.gh("issue", "comment", "1", "--body", "x", env={"FORGE_REPLAY": "0"})
    down.fake.clear_faults()
    from forge.clock import SYSTEM_CLOCK
    from forge.health import replay

    report = replay.replay(
        down.project, down.settings(), SYSTEM_CLOCK, apply=True, batch=0, gh=down.realbin / "gh"
    )
    assert report.clean
    assert down.fake.argvs()[-1][-2:] == ["-R", "acme/widget"]


def test_q14c_a_crashed_allocation_is_skipped_and_reported(down: ForgeEnv) -> None:
    import os
    import time

    down.gh("issue", "comment", "1", "--body", "a", env={"FORGE_REPLAY": "0"})
    crashed = queue_dir(down) / "000002.seq"
    crashed.touch()
    old = time.time() - 3600
    os.utime(crashed, (old, old))
    assert "crashed allocations (no entry written): q000002" in down.forge("queue").stdout
    down.fake.clear_faults()
    assert down.forge("queue", "replay", "--apply").returncode == 0
    result = down.gh("issue", "comment", "1", "--body", "b", env={"FORGE_REPLAY": "0"})
    assert result.returncode == 0


def test_queue_and_cache_outside_a_project_say_so(forge_env: ForgeEnv) -> None:
    outside = forge_env.root / "outside"
    outside.mkdir()
    for verb in (["queue"], ["cache", "status"]):
        result = forge_env.forge(*verb, cwd=outside)
        assert result.returncode == 2
        assert "not inside a git project" in result.stderr


def test_s01_spool_from_stdin_under_both_shells(any_shell_env: ForgeEnv) -> None:
    any_shell_env.fake.seed("first")
    any_shell_env.fake.fail("issue *", "502")
    result = any_shell_env.gh(
        "issue", "comment", "1", "-F", "-", stdin=b"body\n", env={"FORGE_REPLAY": "0"}
    )
    assert result.returncode == 0
    assert MARKER.match(result.stderr.decode().strip())
    assert (queue_dir(any_shell_env) / "000001.d" / "body.md").read_bytes() == b"body\n"


def test_a_spooled_write_never_shows_in_the_projects_git_status(down: ForgeEnv) -> None:
    result = down.gh("issue", "comment", "1", "--body", "hello", env={"FORGE_REPLAY": "0"})
    assert result.returncode == 0
    assert entries(down)
    assert git_status(down.project) == ""


def test_the_queue_is_private_to_its_user(down: ForgeEnv) -> None:
    """Issue 13 item 17 made a `.seq` slot a plain file (it was 0755); the queue holds bodies and
    its seal key, so it is the user's alone: directories 0700, the files forge opens 0600."""
    result = down.gh("issue", "comment", "1", "--body", "x", env={"FORGE_REPLAY": "0"})
    assert result.returncode == 0
    queue = queue_dir(down)
    assert queue.is_relative_to(down.state_dir)
    for directory in (queue.parent, queue, queue / "000001.d"):
        assert directory.stat().st_mode & 0o777 == 0o700, directory
    for path in (queue / "000001.seq", queue / "000001.d" / "body.md"):
        assert path.stat().st_mode & 0o777 == 0o600, path
    assert (down.state_dir / "queue.key").stat().st_mode & 0o777 == 0o600
    assert len((down.state_dir / "queue.key").read_bytes()) == 32


def test_issue13_item3_a_handle_not_in_this_queue_is_refused(down: ForgeEnv) -> None:
    """Issue 13 item 3: `gh issue comment FORGE-Q999` (no such handle) is refused at once with
    gh's own exit code (1) and a sentence; nothing is spooled and the forge is not called."""
    created = down.gh("issue", "create", "--title", "t", "--body", "b", env={"FORGE_REPLAY": "0"})
    assert created.stdout.decode().strip().endswith("/FORGE-Q1")
    calls = len(down.fake.calls())
    result = down.gh("issue", "comment", "FORGE-Q999", "-b", "x", env={"FORGE_REPLAY": "0"})
    assert result.returncode == 1
    assert result.stdout == b""
    assert "FORGE-Q999: no such handle in this project's queue" in result.stderr.decode()
    assert b"not delivered yet" not in result.stderr
    assert [e["seq"] for e in entries(down)] == [1]
    assert len(down.fake.calls()) == calls
    assert (
        down.gh("issue", "comment", "FORGE-Q1", "-b", "y", env={"FORGE_REPLAY": "0"}).returncode
        == 0
    )
    fresh = make_project(down.root / "fresh")
    elsewhere = down.gh("issue", "close", "FORGE-Q1", cwd=fresh)
    assert elsewhere.returncode == 1
    assert b"FORGE-Q1: no such handle in this project's queue" in elsewhere.stderr
    assert not (fresh / ".forge").exists()


def test_a_full_disk_fails_the_write_loudly_and_it_never_lands_later(down: ForgeEnv) -> None:
    """No room to spool (files capped at 512 bytes: the entry cannot be written): the caller
    sees gh's failure and why the write was not queued, and once gh is back a replay delivers
    nothing in its name."""
    # Python's own bytecode cache takes a short write as a whole one: compiled beforehand, a
    # capped interpreter only reads it.
    compileall.compile_dir(Path(forge.__file__).parent, quiet=1)
    capped = ["sh", "-c", 'trap "" XFSZ; ulimit -S -f 1; exec "$@"', "sh", *down.shell.split()]
    full = subprocess.run(
        [*capped, str(down.shim), "issue", "comment", "1", "--body", "lost?"],
        capture_output=True, cwd=down.project,
        env={**down.env, "FORGE_REPLAY": "0"},
        check=False, timeout=60,
    )  # fmt: skip
    assert full.returncode == 1, full.stderr
    assert b"HTTP 503" in full.stderr
    assert b"[forge-queue] NOT queued \xe2\x80\x94 the spool cannot be written: " in full.stderr
    assert b"File too large" in full.stderr
    assert b"Traceback" not in full.stderr
    assert entries(down) == []
    assert not [p for p in queue_dir(down).iterdir() if p.name.endswith(".tmp")]
    down.fake.clear_faults()
    assert down.forge("queue", "replay", "--apply", cwd=down.project).returncode == 0
    assert [c["body"] for c in down.fake.issues()["1"]["comments"]] == []
