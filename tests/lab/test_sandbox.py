"""The sandbox's mount layout (an allow-list) and the attempt's git trees (pure, and real bwrap
runs)."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from forge.attempt.checkouts import (
    inspect_source,
    local_path,
    make_attempt_source,
    make_workspace,
    public_origin,
)
from forge.attempt.sandbox import (
    SYSTEM,
    Entry,
    Sandbox,
    Trees,
    args_fd,
    filesystem_args,
    probe,
)
from forge.lab.seal import hidden_paths

from .kit import NO_USERNS_BWRAP, git

TREE = {
    "/usr": [Entry("bin", "dir"), Entry("local", "dir"), Entry("lib", "dir")],
    "/usr/local": [Entry("out", "dir"), Entry("tools", "dir"), Entry("socket", "other")],
    "/data": [
        Entry("out", "dir"),
        Entry("tools", "dir"),
        Entry("latest", "link", "out/attempts", "/data/out/attempts"),
        Entry("notes", "file"),
    ],
}


def scan(path: str) -> list[Entry] | None:
    return TREE.get(path)


def test_only_the_allow_list_is_shown() -> None:
    """The system folders and the mounts; nothing else of the host is named at all."""
    args = filesystem_args([], shown=["/data"], scan=scan)
    text = "\0".join(args)
    for root in SYSTEM:
        if os.path.islink(root):
            assert f"--symlink\0{os.readlink(root)}\0{root}" in text
        elif os.path.isdir(root):
            assert f"--ro-bind\0{root}\0{root}" in text
    assert "--ro-bind-try\0/data\0/data" in text
    shown = {
        args[i + 2] for i, a in enumerate(args) if a in ("--ro-bind", "--ro-bind-try", "--symlink")
    }
    assert shown <= {*SYSTEM, "/data"}
    for absent in ("/home", "/root", "/srv", "/mnt", "/opt", "/var/lib"):
        assert absent not in args
    for scratch in ("/tmp", "/run", "/var/tmp", "/dev/shm"):
        assert f"--tmpfs\0{scratch}" in text
    assert "--proc\0/proc" in text
    assert "--dev\0/dev" in text
    assert "resolve" not in text


def test_a_protected_path_inside_a_shown_folder_is_absent_not_covered() -> None:
    args = filesystem_args(["/usr/local/out", "/data/out"], shown=["/data"], scan=scan)
    text = "\0".join(args)
    assert "/usr/local/out" not in text
    assert "/data/out\0" not in text
    assert "--dir\0/usr/local" in text
    assert "--ro-bind\0/usr/local/tools\0/usr/local/tools" in text
    assert "--ro-bind\0/usr/bin\0/usr/bin" in text
    assert "/usr/local/socket" not in text
    assert "--ro-bind\0/data/notes\0/data/notes" in text
    assert "/data/latest" not in text  # a link into the protected path is not recreated


def test_an_unlistable_shown_folder_is_hidden_whole() -> None:
    args = filesystem_args(["/srv/secret"], shown=["/srv"], scan=scan)
    assert not any(a.startswith("/srv") for a in args)


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("https://github.com/o/r.git", None),
        ("git@github.com:o/r.git", None),
        ("ssh://host/r.git", None),
        ("file:///srv/r%20x.git", "/srv/r x.git"),
        ("/srv/r.git", "/srv/r.git"),
        ("../r.git", "/base/r.git"),
        ("./a:b", "/base/here/a:b"),
    ],
)
def test_local_path(url: str, local: str | None) -> None:
    found = local_path(url, Path("/base/here"))
    assert (str(found) if found else None) == local


async def test_public_origin_follows_local_clones(tmp_path: Path) -> None:
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q")
    git(upstream, "remote", "add", "origin", "https://example.com/r.git")
    middle = tmp_path / "middle"
    middle.mkdir()
    git(middle, "init", "-q")
    git(middle, "remote", "add", "origin", f"file://{upstream}")
    url, local = await public_origin(tmp_path / "src", "../middle")
    assert url == "https://example.com/r.git"
    assert local == (str(middle), str(upstream))
    git(upstream, "remote", "remove", "origin")
    assert await public_origin(tmp_path / "src", str(middle)) == (
        None,
        (str(middle), str(upstream)),
    )


def test_a_bwrap_that_cannot_create_namespaces_says_why() -> None:
    found = probe({"FORGE_LAB_BWRAP": str(NO_USERNS_BWRAP), "PATH": os.environ["PATH"]})
    assert found.program is None
    assert found.reason is not None
    assert "No permissions to creating new namespace" in found.reason
    missing = probe({"FORGE_LAB_BWRAP": "/nonexistent/bwrap", "PATH": ""})
    assert missing.reason == "FORGE_LAB_BWRAP=/nonexistent/bwrap is not an executable"


def _sandboxed(box: Sandbox, script: str, cwd: Path, env: dict[str, str]) -> str:
    """Run `sh -c script` in `box`; its stdout (the test fails on a non-zero exit)."""
    fd = args_fd(box.args_bytes(["sh", "-c", script], cwd))
    try:
        done = subprocess.run(
            box.argv(["sh", "-c", script], fd),
            pass_fds=(fd,),
            env={"PATH": os.environ["PATH"], **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(fd)
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


def _real_probe() -> str:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    found = probe(os.environ)
    if found.program is None:  # e.g. a container without user namespaces: the layout seal's tests
        pytest.skip(f"bubblewrap cannot run here: {found.reason}")
    return found.program


def test_a_real_sandbox_shows_only_its_trees(tmp_path: Path) -> None:
    """This machine's bwrap: the host's other folders do not exist inside (an earlier `--out`
    and another clone next to the attempt, the home, /srv), a protected folder is absent, the
    system is read-only, /tmp private, the step's tree writable."""
    program = _real_probe()
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "answer").write_text("42")
    elsewhere = Path("/srv") / f"forge-sandbox-test-{uuid.uuid4().hex}"
    elsewhere.mkdir(parents=True)
    (elsewhere / "earlier-out.diff").write_text("the fix")
    work = tmp_path / "work"
    work.mkdir()
    shared = Path("/tmp") / f"forge-sandbox-test-{uuid.uuid4().hex}"
    shared.write_text("outside")
    box = Sandbox.for_attempt(program, hidden=[str(hidden)], mounts=[])
    box = box.with_trees(Trees(writable=(str(work),)))
    script = (
        'test ! -e "$HIDDEN/answer" && ! touch /usr/forge-probe 2>/dev/null && '
        'test ! -e "$SHARED" && test ! -e "$ELSEWHERE" && test ! -e "$HOME_DIR" && '
        'test ! -e /srv/. || test -z "$(ls -A /srv)"; '
        'touch "$WORK/written" && cat /proc/1/cmdline /proc/self/mountinfo'
    )
    env = {
        "HIDDEN": str(hidden),
        "SHARED": str(shared),
        "ELSEWHERE": str(elsewhere),
        "HOME_DIR": str(Path.home()),
        "WORK": str(work),
    }
    try:
        out = _sandboxed(box, script, work, env)
    finally:
        shared.unlink()
        shutil.rmtree(elsewhere)
    assert (work / "written").exists()
    assert out.startswith(f"{program}\0--args\0")
    assert str(hidden) not in out
    assert str(elsewhere) not in out


async def attempt_source(tmp_path: Path) -> tuple[Path, str, Path]:
    """A one-commit repository, its base commit and the attempt source forge makes of it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "f").write_text("x")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    source = tmp_path / "attempt-source"
    await make_attempt_source(repo, base, source)
    return repo, base, source


async def test_the_workspace_is_a_clone_the_source_never_shares(tmp_path: Path) -> None:
    """The recipe's workspace has its own git folder (objects copied, not linked): what it writes
    there never reaches forge's source, and the source holds no remote at all."""
    _, base, source = await attempt_source(tmp_path)
    workspace = tmp_path / "workspace"
    await make_workspace(source, base, workspace, None)
    assert git(source, "remote") == ""
    assert git(workspace, "remote") == ""
    assert git(workspace, "rev-parse", "HEAD") == base
    assert (workspace / ".git").is_dir()
    assert not (workspace / ".git" / "objects" / "info" / "alternates").exists()
    source_files = {p.stat().st_ino for p in (source / ".git").rglob("*") if p.is_file()}
    workspace_files = {p.stat().st_ino for p in (workspace / ".git").rglob("*") if p.is_file()}
    assert not source_files & workspace_files
    assert str(source) not in "".join(
        p.read_bytes().decode("latin-1") for p in (workspace / ".git").rglob("*") if p.is_file()
    )


async def test_a_workspace_reads_back_its_origin_refspec_and_head(tmp_path: Path) -> None:
    repo, base, source = await attempt_source(tmp_path)
    dest = tmp_path / "workspace"
    url = 'https://example.com/a "quoted" \\ repo.git'
    await make_workspace(source, base, dest, url)
    assert git(dest, "remote", "get-url", "origin") == url
    assert git(dest, "config", "remote.origin.fetch") == "+refs/forge-none/*:refs/forge-none/*"
    assert git(dest, "config", "core.hooksPath") == "/dev/null"
    assert git(dest, "rev-parse", "HEAD") == base
    assert git(dest, "rev-list", "--all") == base
    assert not (dest / ".git" / "FETCH_HEAD").exists()
    for where in (source, dest):
        assert str(repo) not in "".join(
            p.read_bytes().decode("latin-1") for p in (where / ".git").rglob("*") if p.is_file()
        )


def test_a_mount_may_sit_in_scratch_whose_other_entries_stay_out() -> None:
    """A virtualenv under /tmp (where the attempts' private folders live) is mounted; a mount
    that holds the scratch folder leaves it out."""
    tree = {"/data": [Entry("scratch", "dir"), Entry("venv", "dir")]}
    inside = filesystem_args(
        [], shown=["/data/scratch/venv"], scratch=["/data/scratch"], scan=tree.get
    )
    assert "--ro-bind-try\0/data/scratch/venv\0/data/scratch/venv" in "\0".join(inside)
    holding = filesystem_args([], shown=["/data"], scratch=["/data/scratch"], scan=tree.get)
    text = "\0".join(holding)
    assert "--ro-bind-try\0/data/venv\0/data/venv" in text
    assert "/data/scratch" not in text


async def test_a_linked_worktree_source_protects_its_main_repository(tmp_path: Path) -> None:
    """The main repository of a `--source` that is a linked worktree holds the whole history,
    and so does a store its alternates borrow from: both are protected paths."""
    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q")
    (main / "f").write_text("x")
    git(main, "add", "-A")
    git(main, "commit", "-qm", "base")
    linked = tmp_path / "linked"
    git(main, "worktree", "add", "-q", "--detach", str(linked))
    borrowed = tmp_path / "borrowed.git"
    git(tmp_path, "init", "-q", "--bare", str(borrowed))
    (main / ".git" / "objects" / "info" / "alternates").write_text(f"{borrowed}/objects\n")
    facts = await inspect_source(linked)
    assert facts.toplevel == str(linked)
    assert set(facts.stores) == {str(main), str(borrowed / "objects")}
    protected = hidden_paths(
        cohort_dir=tmp_path / "cohort", out=tmp_path / "out", source=facts, env={}
    )
    assert {str(main), str(borrowed / "objects")} <= set(protected)
