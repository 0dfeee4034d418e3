"""The gh queue replays only what forge wrote: attacks on the queue through the real shim.

The victim's gh token file sits in HOME; the stateful fake GitHub records every call, every gist
(with the content of the files it was given) and every collaborator, so a write that leaked
or granted anything shows in its state, not only in its call log.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

from .conftest import ForgeEnv, make_project, wait_until

NO_AUTO = {"FORGE_REPLAY": "0"}
SECRET = b"github.com:\n    oauth_token: gho_the_victims_token\n"
PUT_COLLABORATOR = ["api", "-X", "PUT", "repos/acme/widget/collaborators/mallory"]


def plant_secret(env: ForgeEnv) -> Path:
    path = env.root / ".config" / "gh" / "hosts.yml"
    path.parent.mkdir(parents=True)
    path.write_bytes(SECRET)
    return path


def entry_json(seq: int, argv: list[str], project: str) -> dict[str, Any]:
    """An entry as today's format spells one, `kind: edit` so no verification read comes first."""
    return {
        "seq": seq,
        "kind": "edit",
        "repo": None,
        "host": None,
        "target": None,
        "handle": None,
        "depends_on": [],
        "idempotency_key": "0" * 64,
        "argv": argv,
        "title": None,
        "has_body": False,
        "enqueued_at": 0,
        "project": project,
        "live_signal": "server",
        "live_stderr": "",
        "attempts": 0,
        "status": "pending",
        "reason": None,
        "landed_as": None,
    }


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=m", "-c", "user.email=m@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def attacker_repository(env: ForgeEnv) -> Path:
    """A repository that commits `.forge/queue/000001.json` (and its slot): a public gist of
    the victim's gh token file, named relative to where a clone two levels under HOME sits."""
    origin = make_project(env.root / "mallory" / "widget")
    queue = origin / ".forge" / "queue"
    queue.mkdir(parents=True)
    leak = ["gist", "create", "--public", "../../.config/gh/hosts.yml"]
    (queue / "000001.json").write_text(json.dumps(entry_json(1, leak, ".")))
    (queue / "000001.seq").touch()
    git("add", "-f", ".forge", cwd=origin)
    git("commit", "-q", "-m", "ordinary looking commit", cwd=origin)
    return origin


def clone(env: ForgeEnv, origin: Path) -> Path:
    """A real clone, whose origin then reads as GitHub's URL would."""
    target = env.root / "src" / "widget"
    target.parent.mkdir(parents=True)
    git("clone", "-q", str(origin), str(target), cwd=env.root)
    git("remote", "set-url", "origin", "https://github.com/acme/widget.git", cwd=target)
    return target


def leaked_anything(env: ForgeEnv) -> list[list[str]]:
    """Every call the fake received that no queued issue write of the victim's would make."""
    return [argv for argv in env.fake.argvs() if argv[:1] in (["gist"], ["api"])]


def test_a_a_committed_queue_entry_never_runs_after_a_clone(forge_env: ForgeEnv) -> None:
    """Attack (a): a clone brings `.forge/queue/000001.json`; ordinary gh calls through the shim,
    and the automatic replay that the victim's own outage write arms, run none of it; `forge
    queue` in the clone reports it untrusted, moved aside, and its file is kept."""
    plant_secret(forge_env)
    project = clone(forge_env, attacker_repository(forge_env))
    forge_env.fake.seed("first")
    assert forge_env.gh("issue", "list", cwd=project).returncode == 0
    before = forge_env.forge("queue", cwd=project)
    assert before.returncode == 3, before.stdout
    assert "untrusted q000001" in before.stdout

    forge_env.fake.fail("issue *", "503", times=1)
    mine = forge_env.gh("issue", "comment", "1", "--body", "mine", cwd=project, env=NO_AUTO)
    assert b"[forge-queue] not delivered yet" in mine.stderr
    breadcrumb = forge_env.state_dir / "replay-pending"
    assert breadcrumb.exists()
    assert forge_env.gh("issue", "list", cwd=project).returncode == 0  # starts the replay
    wait_until(lambda: not breadcrumb.exists())

    assert forge_env.fake.gists() == []
    assert leaked_anything(forge_env) == []
    assert [c["body"] for c in forge_env.fake.issues()["1"]["comments"]] == ["mine"]
    queue = project / ".forge" / "queue"
    assert not (queue / "000001.json").exists()
    aside = queue / "000001.json.untrusted"
    assert json.loads(aside.read_text())["argv"][:2] == ["gist", "create"]  # kept, not run
    status = forge_env.forge("queue", cwd=project)
    assert status.returncode == 3
    assert f"untrusted q000001 ({aside}): " in status.stdout
    assert "where a repository can commit files" in status.stdout
    assert "moved aside" in status.stdout
    summary = json.loads(forge_env.forge("queue", "--json", cwd=project).stdout)
    assert [u["file"] for u in summary["untrusted_entries"]] == [str(aside)]
    health = forge_env.forge("health", "--no-probe", cwd=project).stdout
    assert "0 pending, 0 set aside, 0 corrupt, 1 untrusted" in health
    assert f"untrusted q000001 ({aside}): found in the project" in health
    assert forge_env.gh("issue", "list", cwd=project).returncode == 0
    assert leaked_anything(forge_env) == []


def real_queue_dir(env: ForgeEnv) -> Path:
    """The directory where forge put the victim's first spooled entry: found, not assumed."""
    [found] = [p for base in (env.project, env.state_dir) for p in base.rglob("000001.json")]
    return found.parent


def test_b_forged_entries_in_the_real_queue_are_refused_on_manual_replay(
    forge_env: ForgeEnv,
) -> None:
    """Attack (b): entries written into the real queue directory beside the victim's own, one
    carrying another entry's seal and one no seal at all, are reported untrusted by `forge
    queue`, moved aside by `forge queue replay --apply` and never run; the victim's write lands."""
    plant_secret(forge_env)
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=1)
    assert forge_env.gh("issue", "comment", "1", "--body", "mine", env=NO_AUTO).returncode == 0
    queue = real_queue_dir(forge_env)
    own = json.loads((queue / "000001.json").read_text())
    grant = {**own, **entry_json(2, PUT_COLLABORATOR, own["project"])}
    grant["mac"] = own.get("mac", "")  # a real seal, of another entry
    leak = entry_json(3, ["gist", "create", "--public", "../.config/gh/hosts.yml"], own["project"])
    for seq, forged in ((2, grant), (3, leak)):
        (queue / f"00000{seq}.json").write_text(json.dumps(forged))
        (queue / f"00000{seq}.seq").touch()

    status = forge_env.forge("queue")
    assert status.returncode == 3
    assert "untrusted q000002" in status.stdout
    assert "untrusted q000003" in status.stdout
    replayed = forge_env.forge("queue", "replay", "--apply")
    assert replayed.returncode == 3, replayed.stdout
    assert "untrusted q000002" in replayed.stdout

    assert forge_env.fake.collaborators() == []
    assert forge_env.fake.gists() == []
    assert leaked_anything(forge_env) == []
    assert [c["body"] for c in forge_env.fake.issues()["1"]["comments"]] == ["mine"]
    for seq in (2, 3):
        assert not (queue / f"00000{seq}.json").exists()
        assert (queue / f"00000{seq}.json.untrusted").exists()
    after = forge_env.forge("queue")
    assert after.returncode == 3
    assert f"untrusted q000002 ({queue / '000002.json.untrusted'}): " in after.stdout
    assert "moved aside" in after.stdout
    assert forge_env.forge("queue", "replay", "--apply").returncode == 3
    assert leaked_anything(forge_env) == []


def test_b_a_sealed_entry_outside_the_allow_list_is_refused(forge_env: ForgeEnv) -> None:
    """Attack (b), the second wall alone: an entry sealed with forge's own key (as a bug, or a
    thief of the key, could make one) whose argv is no write the shim queues is refused too."""
    from forge.health import spool

    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=1)
    assert forge_env.gh("issue", "comment", "1", "--body", "mine", env=NO_AUTO).returncode == 0
    queue = spool.ProjectQueue.of(forge_env.state_dir, forge_env.project)
    own = spool.load_entry(queue, 1)
    assert isinstance(own, spool.QueueEntry)
    forged = spool.QueueEntry(**vars(own))
    forged.seq, forged.argv, forged.has_body, forged.body_sha256 = 2, PUT_COLLABORATOR, False, None
    (queue.directory / "000002.seq").touch()
    spool.write_entry(queue, forged)  # sealed: the seal verifies
    refused = spool.load_entry(queue, 2)
    assert isinstance(refused, spool.RefusedEntry)
    assert refused.verdict == "untrusted"
    assert "not a write the queue replays" in refused.problem

    assert forge_env.forge("queue", "replay", "--apply").returncode == 3
    assert forge_env.fake.collaborators() == []
    assert leaked_anything(forge_env) == []
    assert [c["body"] for c in forge_env.fake.issues()["1"]["comments"]] == ["mine"]
    assert (queue.directory / "000002.json.untrusted").exists()


def test_c_the_victims_own_writes_replay_byte_identical(forge_env: ForgeEnv) -> None:
    """(c): every write shape the shim queues replays with the flags and values it was given and
    the body bytes the forge received on the live attempt, as the fake GitHub records them."""
    forge_env.fake.seed("first", "second")
    forge_env.fake.fail("issue *", "503", times=5)
    body_file = forge_env.root / "edit-body.md"
    body_file.write_bytes(b"edited\tbody\r\n\x00 and a NUL")
    writes: list[tuple[list[str], bytes]] = [
        (["issue", "create", "--title", "todo ✓", "-l", "bug", "--body-file", "-"], b"a\r\n\xe2"),
        (["issue", "comment", "1", "--body", "crlf\r\nline é"], b""),
        (
            [
                "issue",
                "edit",
                "2",
                "--add-label",
                "needs triage",
                "--title=renamed",
                "-F",
                str(body_file),
            ],
            b"",
        ),
        (["issue", "close", "1", "--reason", "not planned", "--comment", "closing"], b""),
        (["issue", "reopen", "1", "-c", "back"], b""),
    ]
    for argv, stdin in writes:
        result = forge_env.gh(*argv, stdin=stdin, env=NO_AUTO)
        assert b"not delivered yet" in result.stderr, result.stderr
    live = {call["argv"][1]: call for call in forge_env.fake.calls() if call["fault"]}
    replayed = forge_env.forge("queue", "replay", "--apply")
    assert replayed.returncode == 0, replayed.stdout
    delivered = {
        call["argv"][1]: call
        for call in forge_env.fake.calls()
        if not call["fault"] and call["argv"][1] in ("create", "comment", "edit", "close", "reopen")
    }

    def sidecar(kind: str, seq: int) -> str:
        argv = delivered[kind]["argv"]
        path = argv[argv.index("--body-file") + 1]
        assert path.endswith(f"/00000{seq}.d/body.md")
        return str(path)

    assert {kind: call["argv"] for kind, call in delivered.items()} == {
        "create": ["issue", "create", "--title", "todo ✓", "-l", "bug", "--body-file",
                   sidecar("create", 1), "-R", "acme/widget"],
        "comment": ["issue", "comment", "1", "--body-file", sidecar("comment", 2),
                    "-R", "acme/widget"],
        "edit": ["issue", "edit", "2", "--add-label", "needs triage", "--title", "renamed",
                 "--body-file", sidecar("edit", 3), "-R", "acme/widget"],
        "close": ["issue", "close", "1", "--reason", "not planned", "--comment", "closing",
                  "-R", "acme/widget"],
        "reopen": ["issue", "reopen", "1", "-c", "back", "-R", "acme/widget"],
    }  # fmt: skip
    for kind in ("create", "comment", "edit"):
        assert delivered[kind]["body_b64"] == live[kind]["body_b64"], kind
    assert base64.b64decode(delivered["create"]["body_b64"]) == b"a\r\n\xe2"
    assert base64.b64decode(delivered["edit"]["body_b64"]) == body_file.read_bytes()
    issues = forge_env.fake.issues()
    assert issues["3"]["title"] == "todo ✓"
    assert [c["body"] for c in issues["1"]["comments"]] == ["crlf\r\nline é"]
    assert issues["2"]["labels"] == ["needs triage"]


def test_a_write_outside_the_allow_list_is_never_spooled(forge_env: ForgeEnv) -> None:
    """What replay would refuse is not queued at all: the live failure passes through with gh's
    exit code and a sentence, so nothing spooled can ever be refused later."""
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=-1)
    draft = forge_env.root / "draft.json"
    draft.write_text("{}")
    result = forge_env.gh("issue", "create", "--title", "t", "--recover", str(draft), env=NO_AUTO)
    assert result.returncode == 1
    assert b"HTTP 503" in result.stderr
    assert (
        "[forge-queue] NOT queued — '--recover' is not among the flags the queue replays for "
        "`gh issue create`, so replay would refuse it; this write was not delivered"
    ) in result.stderr.decode()
    assert not list(forge_env.queue_dir().glob("*.json"))
    assert not (forge_env.state_dir / "replay-pending").exists()


def test_a_changed_body_or_a_lost_key_refuses_the_entry(forge_env: ForgeEnv) -> None:
    """The seal covers the body through its hash: a body changed after queueing is refused; and
    with the key gone nothing can be verified, so every entry is refused (fail closed)."""
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=2)
    for body in ("one", "two"):
        assert forge_env.gh("issue", "comment", "1", "--body", body, env=NO_AUTO).returncode == 0
    queue = forge_env.queue_dir()
    (queue / "000001.d" / "body.md").write_bytes(b"swapped")
    status = forge_env.forge("queue")
    assert status.returncode == 3
    assert f"its body file {queue / '000001.d' / 'body.md'} changed since it was queued" in (
        status.stdout
    )
    shown = forge_env.forge("queue", "show", "1")
    assert (shown.returncode, json.loads(shown.stdout)["untrusted"]) == (3, True)
    (forge_env.state_dir / "queue.key").unlink()
    replayed = forge_env.forge("queue", "replay", "--apply")
    assert replayed.returncode == 3
    assert "untrusted q000002" in replayed.stdout
    assert "its seal does not match" in replayed.stdout
    assert forge_env.fake.issues()["1"]["comments"] == []
    assert sorted(p.name for p in queue.glob("*.json*")) == [
        "000001.json.untrusted",
        "000002.json.untrusted",
    ]


def test_a_symlinked_path_to_the_project_finds_the_same_queue(forge_env: ForgeEnv) -> None:
    """The shell's $PWD keeps a symlink that Python's getcwd resolves: both name one queue."""
    link = forge_env.root / "link"
    link.symlink_to(forge_env.project)
    forge_env.fake.seed("first")
    forge_env.fake.fail("issue *", "503", times=1)
    spooled = forge_env.gh("issue", "comment", "1", "--body", "via link", cwd=link,
                           env={**NO_AUTO, "PWD": str(link)})  # fmt: skip
    assert b"Spooled as q000001" in spooled.stderr
    assert forge_env.forge("queue").returncode == 3
    assert forge_env.forge("queue", "replay", "--apply").returncode == 0
    assert [c["body"] for c in forge_env.fake.issues()["1"]["comments"]] == ["via link"]
