"""The sandbox's mount layout and the attempt source's origin (pure, and one real bwrap run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from forge.attempt.git import local_path, make_attempt_source, public_origin
from forge.attempt.sandbox import Entry, Sandbox, args_fd, filesystem_args, probe

from .kit import NO_USERNS_BWRAP, git

TREE = {
    "/": [
        Entry("bin", "link", "usr/bin", "/usr/bin"),
        Entry("usr", "dir"),
        Entry("home", "dir"),
        Entry("tmp", "dir"),
        Entry("proc", "dir"),
        Entry("dev", "dir"),
        Entry("run", "dir"),
        Entry("data", "dir"),
        Entry("swapfile", "file"),
    ],
    "/home": [Entry("me", "dir"), Entry("you", "dir")],
    "/data": [
        Entry("out", "dir"),
        Entry("tools", "dir"),
        Entry("latest", "link", "out/attempts", "/data/out/attempts"),
        Entry("socket", "other"),
    ],
}


def scan(path: str) -> list[Entry] | None:
    return TREE.get(path)


def test_hidden_paths_are_absent_not_covered() -> None:
    args = filesystem_args(["/home/me", "/data/out"], network=False, scan=scan)
    text = "\0".join(args)
    assert "/home/me" not in text
    assert "/data/out" not in text
    assert args[args.index("/usr") - 1 : args.index("/usr") + 2] == ["--ro-bind", "/usr", "/usr"]
    assert "--symlink\0usr/bin\0/bin" in text
    assert "--ro-bind\0/home/you\0/home/you" in text
    assert "--ro-bind\0/data/tools\0/data/tools" in text
    assert "--dir\0/data" in text
    assert "/data/socket" not in text
    assert "--ro-bind\0/swapfile\0/swapfile" in text
    for scratch in ("/tmp", "/run", "/var/tmp", "/dev/shm"):
        assert f"--tmpfs\0{scratch}" in text
    assert "--proc\0/proc" in text
    assert "--dev\0/dev" in text
    assert "resolve" not in text
    assert "resolve" in "\0".join(filesystem_args([], network=True, scan=scan))


def test_an_unlistable_parent_is_hidden_whole() -> None:
    args = filesystem_args(["/srv/secret"], network=False, scan=scan)
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


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_real_sandbox_hides_and_protects(tmp_path: Path) -> None:
    """This machine's bwrap: the hidden folder is absent, the system read-only, /tmp private."""
    found = probe(os.environ)
    if found.program is None:  # e.g. a container without user namespaces: the layout seal's tests
        pytest.skip(f"bubblewrap cannot run here: {found.reason}")
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "answer").write_text("42")
    work = tmp_path / "work"
    work.mkdir()
    shared = Path("/tmp") / f"forge-sandbox-test-{uuid.uuid4().hex}"
    shared.write_text("outside")
    box = Sandbox(found.program, (str(hidden),), (str(work),), network=False)
    script = (
        'test ! -e "$HIDDEN/answer" && ! touch /usr/forge-probe 2>/dev/null && '
        'test ! -e "$SHARED" && touch "$WORK/written" && cat /proc/1/cmdline /proc/self/mountinfo'
    )
    env = {
        "PATH": os.environ["PATH"],
        "HIDDEN": str(hidden),
        "SHARED": str(shared),
        "WORK": str(work),
    }
    fd = args_fd(box.args_bytes(["sh", "-c", script], work))
    try:
        done = subprocess.run(
            box.argv(["sh", "-c", script], fd),
            pass_fds=(fd,),
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(fd)
        shared.unlink()
    assert done.returncode == 0, done.stderr
    assert (work / "written").exists()
    assert done.stdout.startswith(f"{found.program}\0--args\0")
    assert str(hidden) not in done.stdout


async def test_an_attempt_source_reads_back_its_origin_refspec_and_head(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "f").write_text("x")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    dest = tmp_path / "attempt-source"
    url = 'https://example.com/a "quoted" \\ repo.git'
    await make_attempt_source(repo, url, base, dest)
    assert git(dest, "remote", "get-url", "origin") == url
    assert git(dest, "config", "remote.origin.fetch") == "+refs/forge-none/*:refs/forge-none/*"
    assert git(dest, "config", "core.hooksPath") == "/dev/null"
    assert git(dest, "rev-parse", "HEAD") == base
    assert git(dest, "rev-list", "--all") == base
    assert not (dest / ".git" / "FETCH_HEAD").exists()
    assert str(repo) not in "".join(
        p.read_bytes().decode("latin-1") for p in (dest / ".git").rglob("*") if p.is_file()
    )
