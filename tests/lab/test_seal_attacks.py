"""Recipes that attack the Lab instead of solving the task, through real `forge evaluate` runs.

Each hostile recipe is the honest fake harness (or one that does nothing) behind a shell prelude
that plants the attack first: git configuration that runs programs when forge reads the tree,
code in the recipe's home that every Python would load, files outside the allowed ones that
shadow the module under test, a check that points a view's `.git` somewhere else, a copy of the
fix taken from a linked worktree's main repository, a memory hog, a disk filler. The markers an
attack would write live in a folder the sandbox does not show, so only a process forge ran
outside the sandbox could write them.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import subprocess
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from .kit import ORIGIN, Kit, git
from .test_seal import run_with_source

PYTHON_ACCEPTANCE = (
    "#!/bin/sh\n"
    "exec /usr/bin/python3 -c 'import calc, sys; sys.exit(0 if calc.add(2, 3) == 5 else 1)'\n"
)
"""A hidden acceptance run by the system's Python (its user site is on where a home allows)."""

GIT_PRELUDE = r"""
gd=$(git rev-parse --git-common-dir)
git config --file "$gd/config" core.fsmonitor "touch $MARK/fsmonitor; echo"
git config --file "$gd/config" filter.evil.clean "touch $MARK/clean; cat"
git config --file "$gd/config" filter.evil.smudge "touch $MARK/smudge; cat"
git config --file "$gd/config" diff.evil.textconv "touch $MARK/textconv; cat"
mkdir -p "$gd/info" "$gd/evil-hooks"
printf '* filter=evil diff=evil\n' >> "$gd/info/attributes"
for hook in post-checkout pre-commit post-commit reference-transaction post-index-change; do
  printf '#!/bin/sh\ntouch %s/hook-%s\n' "$MARK" "$hook" > "$gd/evil-hooks/$hook"
  chmod +x "$gd/evil-hooks/$hook"
done
git config --file "$gd/config" core.hooksPath "$gd/evil-hooks"
"$@"
status=$?
cat >> calc.py <<'PAYLOAD'


def _repoint_the_view():
    # Run by the checks on import: the view's .git now names a git folder whose config runs a
    # program, with the view's objects borrowed, so any git run in the view later would run it.
    import os, pathlib
    here = pathlib.Path.cwd()
    dot = here / ".git"
    if not dot.is_file() or not os.environ.get("FORGE_EVAL_WORKSPACE"):
        return
    real = (here / dot.read_text().split(":", 1)[1].strip()).resolve()
    common = (real / (real / "commondir").read_text().strip()).resolve()
    evil = here / ".evil-git"
    (evil / "objects" / "info").mkdir(parents=True, exist_ok=True)
    (evil / "refs").mkdir(exist_ok=True)
    (evil / "objects" / "info" / "alternates").write_text(str(common / "objects") + "\n")
    (evil / "HEAD").write_text((real / "HEAD").read_text())
    (evil / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
        "\tfsmonitor = touch MARK_DIR/view-fsmonitor; echo\n"
    )
    dot.write_text("gitdir: .evil-git\n")


_repoint_the_view()
PAYLOAD
sed -i "s|MARK_DIR|$MARK|" calc.py
exit $status
"""

USER_SITE_PRELUDE = r"""
site=$(/usr/bin/python3 -c 'import site; print(site.getusersitepackages())')
mkdir -p "$site"
echo 'import os; os._exit(0)' > "$site/zz-forge-attack.pth"
printf 'import os\nos._exit(0)\n' > "$site/usercustomize.py"
exec "$@"
"""

SHADOW_PRELUDE = r"""
mkdir -p calc
printf 'def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n' > calc/__init__.py
exec "$@"
"""


def with_prelude(kit: Kit, name: str, prelude: str, **formula: Any) -> str:
    """A Formula whose command runs `prelude` in the workspace, then the fake harness."""
    rel = kit.formula(name, **formula)
    path = kit.cohort_dir / rel
    document = json.loads(path.read_text())
    atom = document["atoms"][0]
    atom["command"] = ["/bin/sh", "-c", prelude, "attack", *atom["command"]]
    path.write_text(json.dumps(document, indent=1))
    return rel


@pytest.fixture
def marks(kit: Kit) -> Path:
    """Where an attack's programs would leave their marks: a folder no sandbox shows."""
    folder = kit.root / "marks"
    folder.mkdir()
    return folder


def test_git_config_a_recipe_writes_never_runs_outside_the_sandbox(kit: Kit, marks: Path) -> None:
    """fsmonitor, filters, textconv and hooks written into the workspace's git folder, and a
    check that repoints its view's `.git`: forge captures, builds views and compares them, and
    not one of those programs runs; the honest fix behind the attack is still accepted."""
    kit.cohort(
        a=with_prelude(kit, "a", GIT_PRELUDE.replace("$MARK", str(marks))),
        b=kit.formula("b", model="m2", knobs={"FAKE_ACTION": "none"}),
        tasks={"t1": kit.plan("t1", checks=["tests/test_calc.py"])},
    )
    kit.approve()
    assert sorted(p.name for p in marks.iterdir()) == []
    record = kit.record("t1", "a")
    assert (record["correct"], record["hiddenAcceptance"]) == (True, True), record
    assert "_repoint_the_view" in (kit.out / "attempts/t1/a/rep-1/changes.diff").read_text()


def test_a_planted_user_site_never_reaches_verification(kit: Kit) -> None:
    """A recipe that fixes nothing and plants a `.pth` and `usercustomize.py` in its home's user
    site (every Python there would exit 0 at once) fails the hidden acceptance."""
    kit.cohort(
        a=kit.formula("a"),
        b=with_prelude(kit, "b", USER_SITE_PRELUDE, model="m2", knobs={"FAKE_ACTION": "none"}),
        tasks={"t1": kit.plan("t1", acceptance=PYTHON_ACCEPTANCE)},
    )
    kit.approve()
    assert kit.record("t1", "a")["correct"] is True
    planter = kit.record("t1", "b")
    assert (planter["hiddenAcceptance"], planter["correct"]) == (False, False), planter


def test_files_outside_the_allowed_ones_never_reach_verification(kit: Kit) -> None:
    """A package `calc/` beside `calc.py` would shadow the module under test: it is captured (and
    out of scope), but the views are built from the allowed files' changes alone."""
    kit.cohort(
        a=kit.formula("a"),
        b=with_prelude(kit, "b", SHADOW_PRELUDE, model="m2", knobs={"FAKE_ACTION": "none"}),
        tasks={"t1": kit.plan("t1", acceptance=PYTHON_ACCEPTANCE)},
    )
    kit.approve()
    assert kit.record("t1", "a")["correct"] is True
    shadow = kit.record("t1", "b")
    assert shadow["changedFiles"] == ["calc/__init__.py"]
    assert shadow["scopeOK"] is False
    assert (shadow["hiddenAcceptance"], shadow["correct"]) == (False, False), shadow


def test_the_host_outside_the_allow_list_does_not_exist_inside(kit: Kit) -> None:
    """An earlier run's `<out>` and another clone in a folder the old deny-list never named
    (/srv), and a file in the home directory, are absent for the recipe."""
    elsewhere = Path("/srv") / f"forge-attack-{uuid.uuid4().hex}"
    secret = Path.home() / f".forge-attack-{uuid.uuid4().hex}"
    secret.write_text("a credential")
    (elsewhere / "out" / "attempts").mkdir(parents=True)
    (elsewhere / "out" / "attempts" / "changes.diff").write_text("+    return a + b\n")
    (elsewhere / "clone").mkdir()
    peek = [str(elsewhere / "out" / "attempts" / "changes.diff"), str(elsewhere / "clone")]
    peek.append(str(secret))
    try:
        kit.cohort(
            a=kit.formula("a", knobs={"FAKE_PEEK": ":".join(peek)}),
            b=kit.formula("b", model="m2"),
            tasks={"t1": kit.plan("t1")},
        )
        kit.approve()
    finally:
        shutil.rmtree(elsewhere)
        secret.unlink()
    probes = [p for p in kit.probes() if p["coordinate"].startswith("t1/a")]
    assert probes
    for probe in probes:
        assert probe["visible"] == dict.fromkeys(peek, False)
    assert kit.record("t1", "a")["correct"] is True


BOMB_PRELUDE = r"""
bash -c ':(){ :|:& };:; wait'
exec "$@"
"""


def test_a_fork_bomb_recipe_ends_on_its_limit_and_its_sibling_is_accepted(
    kit: Kit, tmp_path: Path
) -> None:
    """Through a real run with `[lab]` bounds from forge.toml: the bombing attempt ends as
    `resource-limit: pids` (named in report.md), the honest one beside it is accepted."""
    config = tmp_path / "forge.toml"
    config.write_text("[lab]\nlimit_pids = 64\nlimit_memory_mib = 512\n")
    kit.cohort(
        a=kit.formula("a"),
        b=with_prelude(kit, "b", BOMB_PRELUDE, model="m2"),
        tasks={"t1": kit.plan("t1")},
    )
    done = kit.approve("--parallel", "2", env={"FORGE_CONFIG": str(config)})
    assert done.returncode == 2, done.stderr
    assert kit.record("t1", "a")["correct"] is True
    bombed = kit.record("t1", "b")
    assert (bombed["outcome"], bombed["correct"]) == ("resource-limit: pids", False), bombed
    assert any("reached the pids limit" in note for note in bombed["notes"])
    lines = (kit.out / "report.md").read_text().splitlines()
    line = next(line for line in lines if line.startswith("- t1 b rep-1: "))
    assert line.startswith("- t1 b rep-1: incomplete;")
    assert line.endswith("; resource-limit: pids")


FORKS = "import os, time\nfor _ in range(1000):\n    if os.fork() == 0:\n        time.sleep(1000)\n"
"""A bounded fork bomb (a thousand sleeping children): the rlimit fallback samples, so a real
bomb could run between two samples there."""


def test_a_check_killed_at_a_bound_names_the_bound_not_an_exit_code(
    kit: Kit, tmp_path: Path
) -> None:
    """A check that forks past the pids bound in a verification view: its failed output, its
    observation and report.md name the bound (`resource-limit: pids`), never a bare null exit."""
    config = tmp_path / "forge.toml"
    config.write_text("[lab]\nlimit_pids = 64\n")
    bomb = {"id": "bomb", "argv": ["python3", "-c", FORKS], "category": "lint", "timeoutMs": 60000}
    kit.cohort(
        a=kit.formula("a", checks=[bomb]),
        b=kit.formula("b", model="m2"),
        tasks={"t1": kit.plan("t1")},
    )
    done = kit.approve(env={"FORGE_CONFIG": str(config)})
    assert done.returncode == 2, done.stderr
    record = kit.record("t1", "a")
    [failed] = record["failedCheckOutput"]
    assert (failed["id"], failed["view"], failed.get("limit")) == ("bomb", "candidate", "pids")
    views = json.loads(
        (kit.out / "attempts" / "t1" / "a" / "rep-1" / "verification.json").read_text()
    )["views"]
    [observed] = [o for o in views["candidate"]["observations"] if o["id"] == "bomb"]
    assert observed["limit"] == "pids"
    report = (kit.out / "report.md").read_text()
    assert "failed check `bomb` (candidate view, resource-limit: pids):" in report


REACH_PRELUDE = r"""
/usr/bin/python3 - >&2 <<'PY' || true
import http.client, os, socket, urllib.parse
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=5).close()
    print("direct reached")
except OSError as error:
    print("direct refused", error)
proxy = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
through = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=10)
through.request("GET", "http://127.0.0.1:PORT/")
print("proxied", through.getresponse().status)
PY
exec "$@"
"""


def test_a_networked_recipe_cannot_reach_a_service_on_the_hosts_loopback(kit: Kit) -> None:
    """With `network: true` through a real run: a listener on the host's 127.0.0.1 (where a
    Dask scheduler would be) accepts nothing, directly or through the egress proxy, and the
    proxy's refusal is in the attempt's record; the honest fix behind the attempt is accepted."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        listener.setblocking(False)
        kit.cohort(
            a=with_prelude(
                kit, "a", REACH_PRELUDE.replace("PORT", str(port)), atom={"network": True}
            ),
            b=kit.formula("b", model="m2"),
            tasks={"t1": kit.plan("t1")},
        )
        kit.approve()
        with pytest.raises(BlockingIOError):
            listener.accept()
    record = kit.record("t1", "a")
    assert record["correct"] is True
    decisions = record["egress"]["decisions"]
    assert {
        "destination": f"127.0.0.1:{port}",
        "decision": "refused",
    }.items() <= decisions[0].items(), decisions
    assert "loopback" in decisions[0]["reason"]
    report = (kit.out / "report.md").read_text()
    assert f"  - network: refused 127.0.0.1:{port} (loopback" in report


ALLOW_LIST_PRELUDE = r"""
/usr/bin/python3 - >&2 <<'PY' || true
import http.client, os, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
def through(method, target, headers):
    connection = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=30)
    connection.request(method, target, headers=headers)
    print(method, target, connection.getresponse().status)
through("GET", "http://127.0.0.1:MODEL/v1/models", {"x-api-key": os.environ["ANTHROPIC_API_KEY"]})
through("GET", "http://127.0.0.1:OTHER/", {})
through("CONNECT", "example.com:443", {})
through("CONNECT", "10.1.2.3:80", {})
through("GET", "http://10.1.2.3:80/", {})
PY
exec "$@"
"""


class _KeyRecorder(http.server.BaseHTTPRequestHandler):
    """The scripted model's stand-in: answers 200 and keeps each request's API key."""

    keys: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        self.keys.append(self.headers.get("x-api-key"))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_an_allow_listed_recipe_reaches_its_model_and_nothing_else(kit: Kit) -> None:
    """`egress: ["127.0.0.1:MODEL"]` through a real run (bubblewrap, the proxy, real sockets):
    the recipe reaches the listed loopback server with the caller's API key (`passEnv`), while
    another loopback port accepts nothing and a public name and a LAN address are refused by the
    list itself (before any lookup or connection); every refusal is in the record and the
    report, the attempt stays sealed, and the key is in no file of the run."""
    key = f"sk-ant-test-{uuid.uuid4().hex}"
    model = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _KeyRecorder)
    _KeyRecorder.keys = []
    serving = threading.Thread(target=model.serve_forever, daemon=True)
    serving.start()
    model_port = model.server_address[1]
    try:
        with socket.create_server(("127.0.0.1", 0)) as other:
            other_port = other.getsockname()[1]
            other.setblocking(False)
            prelude = ALLOW_LIST_PRELUDE.replace("MODEL", str(model_port))
            atom = {"egress": [f"127.0.0.1:{model_port}"], "passEnv": ["ANTHROPIC_API_KEY"]}
            kit.cohort(
                a=with_prelude(kit, "a", prelude.replace("OTHER", str(other_port)), atom=atom),
                b=kit.formula("b", model="m2"),
                tasks={"t1": kit.plan("t1")},
            )
            preview = kit.cli()
            assert f"  egress: 127.0.0.1:{model_port}\n" in preview.stdout
            assert f"variant a: network: only 127.0.0.1:{model_port} through" in preview.stdout
            assert kit.approve(env={"ANTHROPIC_API_KEY": key}).returncode == 0
            with pytest.raises(BlockingIOError):
                other.accept()
    finally:
        model.shutdown()
        model.server_close()
    assert _KeyRecorder.keys == [key]
    record = kit.record("t1", "a")
    assert record["correct"] is True
    assert record["seal"] == {
        "sandbox": "bubblewrap",
        "reason": None,
        "network": False,
        "egress": [f"127.0.0.1:{model_port}"],
    }
    assert record["egress"]["policy"] == "allow-list"
    decided = {
        (d["destination"], d["decision"], d["reason"]) for d in record["egress"]["decisions"]
    }
    assert decided == {
        (f"127.0.0.1:{model_port}", "admitted", "listed loopback address 127.0.0.1"),
        (f"127.0.0.1:{other_port}", "refused", "not on the egress list"),
        ("example.com:443", "refused", "not on the egress list"),
        ("10.1.2.3:80", "refused", "not on the egress list"),
    }
    report = (kit.out / "report.md").read_text()
    line = next(line for line in report.splitlines() if line.startswith("- t1 a rep-1: "))
    assert line.endswith(f"; sealed: yes (egress: 127.0.0.1:{model_port})")
    assert "sealed: no" not in report
    for refused in (f"127.0.0.1:{other_port}", "example.com:443", "10.1.2.3:80"):
        assert f"  - network: refused {refused} (not on the egress list)" in report
    probe = next(p for p in kit.probes() if p["coordinate"].startswith("t1/a"))
    assert probe["env"]["ANTHROPIC_API_KEY"] == key
    assert "127.0.0.1" not in probe["env"]["NO_PROXY"].split(",")
    b_probe = next(p for p in kit.probes() if p["coordinate"].startswith("t1/b"))
    assert "ANTHROPIC_API_KEY" not in b_probe["env"]
    for folder in (kit.out, kit.cohort_dir):
        for file in folder.rglob("*"):
            if file.is_file() and not file.is_symlink():
                assert key.encode() not in file.read_bytes(), file


STORE_PRELUDE = r"""
for tree in MAIN; do
  if grep -q 'return a + b' "$tree/calc.py" 2>/dev/null; then
    cp "$tree/calc.py" calc.py && echo "$tree/calc.py" >> CTL/read-the-fix
  fi
done
for gd in MAIN/.git BORROWED; do
  if git -c safe.directory='*' --git-dir="$gd" show LATER:calc.py > /tmp/fix 2>/dev/null; then
    cp /tmp/fix calc.py && echo "$gd" >> CTL/read-the-fix
  fi
done
exec "$@"
"""
"""Copy the fixed `calc.py` from the main repository's checkout, or the fix's commit from its git
folder or from the store its alternates borrow from; each success leaves its path in CTL."""


def test_a_linked_worktree_source_keeps_its_main_repository_and_alternates_out_of_reach(
    kit: Kit,
) -> None:
    """`--source` is a linked worktree at the base commit; its main repository (checked out at
    the fix, the fix in its history) and the store its alternates file names sit in a folder the
    allow-list shows (`/usr/local/src`, a system-wide checkout). A recipe that reads the fix from
    any of the three fails the hidden acceptance; an honest one is accepted, and neither sees
    them."""
    shown = Path("/usr/local/src")
    if not os.access(shown, os.W_OK):
        pytest.skip(f"{shown} is not writable here")
    folder = shown / f"forge-attack-{uuid.uuid4().hex}"
    main, borrowed = folder / "main", folder / "borrowed.git"
    try:
        folder.mkdir()
        git(folder, "clone", "-q", str(kit.repo), str(main))
        git(main, "remote", "set-url", "origin", ORIGIN)
        git(folder, "clone", "-q", "--bare", str(kit.repo), str(borrowed))
        (main / ".git" / "objects" / "info" / "alternates").write_text(f"{borrowed}/objects\n")
        linked = kit.root / "linked"
        git(main, "worktree", "add", "-q", "--detach", str(linked), kit.base)
        cheat = STORE_PRELUDE.replace("MAIN", str(main)).replace("BORROWED", str(borrowed))
        cheat = cheat.replace("LATER", kit.later).replace("CTL", str(kit.ctl))
        peek = [str(main), str(main / ".git"), str(borrowed / "objects")]
        kit.cohort(
            a=kit.formula("a", knobs={"FAKE_PEEK": ":".join(peek)}),
            b=with_prelude(kit, "b", cheat, model="m2", knobs={"FAKE_ACTION": "none"}),
            tasks={"t1": kit.plan("t1")},
        )
        preview, done = run_with_source(kit, linked)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert not (kit.ctl / "read-the-fix").exists(), (kit.ctl / "read-the-fix").read_text()
    assert done.returncode == 2, done.stderr
    assert kit.record("t1", "a")["correct"] is True
    cheat_record = kit.record("t1", "b")
    assert (cheat_record["hiddenAcceptance"], cheat_record["correct"]) == (False, False)
    for probe in kit.probes():
        assert probe["revList"] == [kit.base]
        if probe["coordinate"].startswith("t1/a"):
            assert probe["visible"] == dict.fromkeys(peek, False)
    absent = "  absent although inside a shown folder: "
    [listed] = [line for line in preview.stdout.splitlines() if line.startswith(absent)]
    assert {f"{borrowed}/objects", str(main)} <= set(listed.removeprefix(absent).split(", "))


HOG_OR_FILLER_PRELUDE = r"""
case "$FORGE_ATTEMPT_ID" in
memory.*) /usr/bin/python3 -c '
hoard = []
for _ in range(512):
    hoard.append(bytearray(1 << 20))
__import__("time").sleep(1000)
' ;;
disk.*) /usr/bin/python3 -c '
import time
for n in range(256):
    with open(f"fill-{n}", "wb") as out:
        out.write(b"x" * (1 << 20))
    time.sleep(0.02)
time.sleep(1000)
' ;;
esac
exec "$@"
"""
"""A memory hog (on task `memory`) or a filler of 1 MiB files in the workspace (on `disk`). Each
stops by itself at 512 MiB and then waits, so a broken bound ends the attempt on its timeout
instead of pressing on the machine."""


SKELETON = r"""
import json, os, stat, sys
root = os.stat("/").st_dev
skeleton = {}
def walk(folder):
    entries = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        info = os.lstat(path)
        entries[name] = os.readlink(path) if stat.S_ISLNK(info.st_mode) else None
        if stat.S_ISDIR(info.st_mode) and info.st_dev == root:
            walk(path)
    skeleton[folder] = entries
walk("/")
own = [os.getcwd(), os.environ["HOME"], os.environ.get("FORGE_TASK_FILE")]
with open(sys.argv[1], "a") as out:
    out.write(json.dumps({"step": sys.argv[2], "skeleton": skeleton, "own": own}) + "\n")
"""
"""Every folder of the sandbox's own root filesystem, from `/` down (what bubblewrap made to hold
its mounts), with its entries and the links' targets: anything visible hangs off it."""

ALLOW_LIST = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""The operating system a step sees, as docs/lab.md states it (where each exists)."""


def listed_trees(preview: str, variant: str) -> tuple[dict[str, str | None], set[str]]:
    """What the preview says a step of `variant` sees: the system folders read-only (each with
    its link's target), and every path listed."""
    lines = preview.splitlines()
    read_only = next(line for line in lines if line.startswith("  read-only: "))
    private = next(line for line in lines if line.startswith("  private and empty: "))
    system: dict[str, str | None] = {}
    for entry in read_only.removeprefix("  read-only: ").split(", "):
        path, _, target = entry.partition(" -> ")
        system[path] = target or None
    trees = set(system)
    trees |= set(private.removeprefix("  private and empty: ").replace("; ", ", ").split(", "))
    start = lines.index(next(line for line in lines if line.startswith(f"  variant {variant}: ")))
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        if line.startswith("    mounts "):
            trees.add(line.removeprefix("    mounts ").removesuffix(" read-only"))
    return system, trees


def outermost(paths: set[str]) -> set[str]:
    """The paths no other one holds."""
    return {
        p for p in paths if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in paths)
    }


@dataclass(frozen=True)
class BoundedRun:
    kit: Kit
    preview: str
    done: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def bounded(module_kit: Kit) -> BoundedRun:
    """One real run with small `[lab]` bounds from forge.toml, shared by the two tests below:
    on tasks `memory` and `disk`, variant b is the hog or the filler; variant a fixes honestly,
    and its recipe and its check (in every verification view) record what their sandbox holds."""
    kit = module_kit
    config = kit.root / "forge.toml"
    config.write_text("[lab]\nlimit_memory_mib = 128\nlimit_disk_mib = 16\n")
    listings = kit.ctl / "skeletons.jsonl"
    prelude = f"/usr/bin/python3 - {listings} recipe <<'PY'\n{SKELETON}\nPY\nexec \"$@\"\n"
    check = {
        "id": "skeleton",
        "argv": ["/usr/bin/python3", "-c", SKELETON, str(listings), "view"],
        "category": "lint",
        "timeoutMs": 60000,
    }
    kit.cohort(
        a=with_prelude(kit, "a", prelude, checks=[check]),
        b=with_prelude(kit, "b", HOG_OR_FILLER_PRELUDE, model="m2"),
        tasks={"memory": kit.plan("memory"), "disk": kit.plan("disk")},
    )
    env = {"FORGE_CONFIG": str(config)}
    preview = kit.cli(env=env).stdout
    return BoundedRun(kit, preview, kit.approve("--parallel", "2", env=env))


def test_a_memory_hog_and_a_disk_filler_end_on_their_limits_and_their_siblings_are_accepted(
    bounded: BoundedRun,
) -> None:
    """The hog ends as `resource-limit: memory`, the filler as `resource-limit: disk`, each
    named in attempt.json, its notes and report.md, while the honest attempt beside each is
    accepted."""
    kit = bounded.kit
    assert bounded.done.returncode == 2, bounded.done.stderr
    lines = (kit.out / "report.md").read_text().splitlines()
    for limit in ("memory", "disk"):
        assert kit.record(limit, "a")["correct"] is True
        ended = kit.record(limit, "b")
        assert (ended["outcome"], ended["correct"]) == (f"resource-limit: {limit}", False), ended
        assert any(f"reached the {limit} limit" in note for note in ended["notes"]), ended
        line = next(line for line in lines if line.startswith(f"- {limit} b rep-1: "))
        assert line.startswith(f"- {limit} b rep-1: incomplete;")
        assert line.endswith(f"; resource-limit: {limit}")


def test_the_preview_lists_exactly_what_a_step_sees(bounded: BoundedRun) -> None:
    """The trees the preview lists are the allow-list (the system folders, the mounts, private
    scratch) and are exactly what hangs off the root of the recipe's sandbox and of each
    verification view's: nothing else exists inside, the home directory and /srv (present on
    the host) are neither listed nor there, and each link is the one listed."""
    kit = bounded.kit
    system, listed = listed_trees(bounded.preview, "a")
    assert set(system) == {path for path in ALLOW_LIST if os.path.lexists(path)}, system
    home = os.path.realpath(Path.home())
    assert Path("/srv").is_dir()
    for outside in (home, "/srv"):
        assert not any(outside == p or outside.startswith(f"{p}/") for p in listed), outside
    steps = [json.loads(line) for line in (kit.ctl / "skeletons.jsonl").read_text().splitlines()]
    assert [step["step"] for step in steps].count("recipe") == 2
    assert {step["step"] for step in steps} == {"recipe", "view"}
    for step in steps:
        skeleton = step["skeleton"]
        assert "srv" not in skeleton["/"]
        leaves = {
            os.path.join(folder, name): target
            for folder, entries in skeleton.items()
            for name, target in entries.items()
            if os.path.join(folder, name) not in skeleton
        }
        own = {path for path in step["own"] if path}
        assert set(leaves) == outermost(listed | own), step["step"]
        for path, target in system.items():
            assert leaves[path] == target
