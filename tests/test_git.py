"""`forge.git`'s profile attacked the way a hostile repository or caller would attack it.

A repository forge reads may have been written by someone else (an agent on a seat, a recipe, a
clone's author). Its configuration, wherever git finds it (`.git/config`, a file behind
`include.path`, `config.worktree`), names programs for every hook git has: fsmonitor, filters
(`clean`, `smudge`, `process`, one of them named `a=b`, which a `-c` option would split), textconv
and external diff drivers, `diff.external`, the pager, the signature program behind
`log.showSignature`, and hooks through `core.hooksPath`. Each program writes a marker file. The
same repository is first shown to make every marker under plain git, so the attack is real; then
every git forge runs on a seat (through the real tree worker) and in replay must make none, while
still answering what the repository holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty
import shutil
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from forge import git as forge_git
from forge.attempt.checkouts import has_commit, list_files
from forge.clock import PinnedClock
from forge.config import load_config
from forge.ipc.manager import WorkerManager
from forge.lab import replay_git
from forge.supervisor.seatfiles.trees import TreeWorker
from forge.supervisor.socket.core import Supervisor
from forge.wire.git import Diff, Populated
from forge.workers.trees.gitstate import LocalTrees
from forge.workers.trees.protocol import Seen, WatchHeard
from forge.workers.trees.watch import git_folders

WHERE = ("config", "include", "worktree")
"""Where the hostile keys are: `.git/config`, a file it includes, `config.worktree`."""
PROGRAMS = {
    "fsmonitor": "exit 1",
    "pager": "cat >/dev/null",
    "gpg": "exit 1",
    "external": "exit 0",
    "command": "exit 0",
    "textconv": 'exec cat "$1"',
    "clean": "exec cat",
    "smudge": "exec cat",
    "process": "exit 1",
    "eqclean": "exec cat",
}
"""Each program the attacker names, and what it does after leaving its marker."""
HOOKS = ("pre-commit", "post-checkout")
ATTRIBUTES = "*.txt filter=evil diff=conv\n*.cfg diff=ext\n*.md filter=a=b\n*.py filter=proc\n"
FILES = {"a.txt": "one\n", "b.cfg": "k = 1\n", "c.md": "# c\n", "d.py": "x = 1\n"}


def plain_env() -> dict[str, str]:
    """The environment a person's git runs with: this one, without any GIT_* or pager choice."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "PAGER"}


def plain(tree: Path, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    """Plain git, as a person (or forge before the profile) runs it; must succeed if `check`."""
    done = subprocess.run(
        ["git", *args],
        cwd=tree,
        env=env or plain_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 or not check, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


def plain_on_a_terminal(tree: Path, *args: str) -> None:
    """Plain git with its output on a terminal, where it starts the pager."""
    leader, follower = pty.openpty()
    try:
        subprocess.run(
            ["git", *args],
            cwd=tree,
            env=plain_env(),
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=follower,
            timeout=60,
            check=True,
        )
    finally:
        os.close(follower)
        os.close(leader)


def program(folder: Path, marks: Path, name: str, then: str) -> Path:
    """An executable that leaves `marks/<name>`, then does `then`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f'#!/bin/sh\ntouch "{marks}/{name}"\n{then}\n')
    path.chmod(0o755)
    return path


def init(tree: Path) -> None:
    tree.mkdir(parents=True, exist_ok=True)
    plain(tree, "init", "-q", "-b", "main")
    plain(tree, "config", "user.email", "t@example.com")
    plain(tree, "config", "user.name", "t")
    plain(tree, "config", "commit.gpgsign", "false")
    plain(tree, "config", "core.hooksPath", "/dev/null")


def sign(tree: Path) -> None:
    """Give HEAD's commit a (bogus) signature header, so showing it runs the signature program."""
    body = plain(tree, "cat-file", "commit", "HEAD")
    header, _, message = body.partition("\n\n")
    signature = "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQE=\n -----END PGP SIGNATURE-----"
    signed = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
        cwd=tree,
        env=plain_env(),
        input=f"{header}\n{signature}\n\n{message}",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    plain(tree, "update-ref", "refs/heads/feat", signed)


@dataclass
class Hostile:
    tree: Path
    marks: Path
    where: str
    head: str
    """The signed commit `feat` points at (one ahead of `main`)."""

    def seen(self) -> set[str]:
        return {path.name for path in self.marks.iterdir()}

    @property
    def every_mark(self) -> set[str]:
        return {f"{self.where}-{name}" for name in (*PROGRAMS, *HOOKS)}


def hostile(root: Path, where: str) -> Hostile:
    """A repository on `feat` (a signed commit ahead of `main`), four files changed and one new
    in its work tree, and every hostile key in `where`; no marker made yet."""
    tree, marks = root / "tree", root / "marks"
    marks.mkdir(parents=True)
    init(tree)
    (tree / ".gitattributes").write_text(ATTRIBUTES)
    for name, text in FILES.items():
        (tree / name).write_text(text)
    plain(tree, "add", "-A")
    plain(tree, "commit", "-qm", "base")
    plain(tree, "checkout", "-q", "-b", "feat")
    for name, text in FILES.items():
        (tree / name).write_text(text + "two\n")
    plain(tree, "commit", "-qam", "feat: two")
    sign(tree)
    for name, text in FILES.items():
        (tree / name).write_text(text + "two\nthree\n")
    (tree / "new.txt").write_text("new\n")

    bin_ = root / "bin"
    programs = {
        name: str(program(bin_, marks, f"{where}-{name}", then)) for name, then in PROGRAMS.items()
    }
    hooks = root / "hooks"
    for hook in HOOKS:
        program(hooks, marks, f"{where}-{hook}", "exit 0").rename(hooks / hook)
    keys = {
        "core.fsmonitor": programs["fsmonitor"],
        "core.pager": programs["pager"],
        "core.hooksPath": str(hooks),
        "log.showSignature": "true",
        "gpg.program": programs["gpg"],
        "diff.external": programs["external"],
        "diff.ext.command": programs["command"],
        "diff.conv.textconv": programs["textconv"],
        "filter.evil.clean": programs["clean"],
        "filter.evil.smudge": programs["smudge"],
        "filter.proc.process": programs["process"],
        "filter.a=b.clean": programs["eqclean"],
    }
    if where == "config":
        target: tuple[str, ...] = ()
    elif where == "include":
        target = ("--file", str(tree / ".git" / "hostile.inc"))
        plain(tree, "config", "include.path", "hostile.inc")
    else:
        plain(tree, "config", "extensions.worktreeConfig", "true")
        target = ("--worktree",)
    for key, value in keys.items():
        plain(tree, "config", *target, key, value)
    head = plain(tree, "rev-parse", "HEAD").strip()
    return Hostile(tree, marks, where, head)


@pytest.mark.parametrize("where", WHERE)
def test_the_hostile_repository_runs_every_program_under_plain_git(
    tmp_path: Path, where: str
) -> None:
    """The attack is real: what forge reads, plain git runs every program for (the `process`
    filter, which does not speak its protocol, fails the git that starts it: that one runs
    last, on its own)."""
    repo = hostile(tmp_path, where)
    tree = repo.tree
    others = (".", ":!d.py")
    plain(tree, "status")
    plain(tree, "diff", "HEAD", "--", *others)
    plain(tree, "diff", "--no-ext-diff", "HEAD", "--", *others)
    plain(tree, "log", "-1")
    plain_on_a_terminal(tree, "log", "-1")
    plain(tree, "add", "--", *others)
    plain(tree, "commit", "-qm", "more")
    plain(tree, "checkout", "-q", "main", "--", *others)
    plain(tree, "diff", "feat", "--", "d.py", check=False)
    assert repo.seen() == repo.every_mark


@contextlib.asynccontextmanager
async def tree_worker(tmp_path: Path) -> AsyncIterator[TreeWorker]:
    """The supervisor's git reader: the real tree worker, started by a real worker manager."""
    config = tmp_path / "forge.toml"
    config.write_text("", encoding="utf-8")
    async with WorkerManager() as manager:
        supervisor = Supervisor(load_config(config))
        trees = TreeWorker(supervisor, manager)
        trees.install()
        try:
            yield trees
        finally:
            await supervisor.shutdown()


async def read_seat(trees: TreeWorker, tree: Path) -> tuple[Seen, Diff | None, str, bytes]:
    """Every read the supervisor asks of a seat's tree, through the real tree worker."""
    seen, diff = await trees.record(tree)
    work = await trees.work(tree)
    assert work == seen.work
    commit = await trees.commit(tree, "HEAD")
    assert commit is not None
    _, data = await trees.blob(tree, commit, "a.txt", 1 << 20)
    ready = asyncio.Event()

    def heard(event: WatchHeard) -> None:
        if event.word == "ready":
            ready.set()

    ident = await trees.watch(tree, heard)
    await ready.wait()
    trees.unwatch(ident)
    return seen, diff, commit, data


@pytest.mark.parametrize("where", WHERE)
async def test_no_seat_read_runs_a_program_the_repository_names(tmp_path: Path, where: str) -> None:
    repo = hostile(tmp_path, where)
    async with tree_worker(tmp_path) as trees:
        seen, diff, commit, data = await read_seat(trees, repo.tree)
    assert repo.seen() == set()
    assert seen.work.branch == "feat"
    assert seen.work.changed == 5
    assert seen.git is not None
    assert seen.git.ahead is not None
    assert seen.git.ahead.commit_count == 1
    assert seen.git.worktree is not None
    assert [f.path for f in seen.git.worktree.files] == [*FILES, "new.txt"]
    assert diff is not None
    assert isinstance(diff.worktree, Populated)
    assert isinstance(diff.branch_ahead, Populated)
    assert (commit, data) == (repo.head, b"one\ntwo\n")
    assert await git_folders(repo.tree) == [repo.tree / ".git"]
    assert repo.seen() == set()


@pytest.mark.parametrize("where", WHERE)
async def test_no_replay_git_runs_a_program_the_source_names(tmp_path: Path, where: str) -> None:
    repo = hostile(tmp_path, where)
    source = repo.tree
    head = await forge_git.resolve_commit(source, "HEAD")
    base = await replay_git.merge_base(source, "main", head)
    assert await replay_git.parents(source, head) == [base]
    assert await has_commit(source, head)
    assert set(await list_files(source, head)) == {".gitattributes", *FILES}
    modes = await replay_git.file_modes(source, head, ["a.txt", "b.cfg"])
    assert modes == {"a.txt": "100644", "b.cfg": "100644"}
    assert await replay_git.blob(source, head, "a.txt") == b"one\ntwo\n"
    work = tmp_path / "work"
    work.mkdir()
    await replay_git.scratch_repo(source, work / "repo")
    await replay_git.worktree(work / "repo", work / "base", base)
    assert (work / "base" / "a.txt").read_text() == "one\n"
    await replay_git.drop_worktree(work / "repo", work / "base")
    out = tmp_path / "out"
    out.mkdir()
    await replay_git.history_free_source(source, out / "source", [("t", base)], "https://x.test/r")
    assert (out / "source" / "a.txt").read_text() == "one\n"
    assert repo.seen() == set()


def embedded_bare(root: Path, marks: Path) -> Path:
    """A clone of a repository whose committed content holds `evil/`, a bare repository whose
    configuration names an fsmonitor and a work tree: the clone's `evil/` folder."""
    outer = root / "outer"
    init(outer)
    evil = outer / "evil"
    plain(outer, "init", "-q", "--bare", str(evil))
    shutil.rmtree(evil / "hooks")
    for folder in ("objects", "refs"):
        (evil / folder / ".keep").write_text("")
    fsmonitor = program(root / "bin", marks, "bare-fsmonitor", "exit 1")
    plain(evil, "config", "core.fsmonitor", str(fsmonitor))
    plain(evil, "config", "core.bare", "false")
    plain(evil, "config", "core.worktree", "..")
    plain(outer, "add", "-A")
    plain(outer, "commit", "-qm", "a bare repository as content")
    plain(root, "clone", "-q", str(outer), str(root / "clone"))
    return root / "clone" / "evil"


async def test_a_bare_repository_in_committed_content_is_never_used(tmp_path: Path) -> None:
    """`safe.bareRepository=explicit`: git in such a folder refuses it rather than reading its
    configuration, so a seat or a replay source pointed there reads as no repository."""
    marks = tmp_path / "marks"
    marks.mkdir()
    evil = embedded_bare(tmp_path, marks)
    plain(evil, "status")
    assert {path.name for path in marks.iterdir()} == {"bare-fsmonitor"}
    (marks / "bare-fsmonitor").unlink()

    async with tree_worker(tmp_path) as trees:
        seen, diff = await trees.record(evil)
    assert (seen.work.gate, seen.git, diff) == (False, None, None)
    assert await git_folders(evil) == []
    with pytest.raises(forge_git.GitError, match="cannot use bare repository"):
        await forge_git.resolve_commit(evil, "HEAD")
    assert list(marks.iterdir()) == []


async def test_a_submodules_own_drivers_never_run(tmp_path: Path) -> None:
    """A submodule's configuration is its own: reading it would start a `git status` inside
    it, under its drivers. The seat's reads never look inside a submodule's work tree."""
    marks = tmp_path / "marks"
    marks.mkdir()
    sub, outer = tmp_path / "sub", tmp_path / "outer"
    init(sub)
    (sub / ".gitattributes").write_text("*.txt filter=evil\n")
    (sub / "s.txt").write_text("s\n")
    plain(sub, "add", "-A")
    plain(sub, "commit", "-qm", "sub")
    init(outer)
    plain(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "sub")
    plain(outer, "commit", "-qm", "with a submodule")
    clean = program(tmp_path / "bin", marks, "submodule-clean", "exec cat")
    plain(outer / "sub", "config", "filter.evil.clean", str(clean))

    def stat_dirty() -> None:
        """Same bytes, a new mtime: git must hash the file again, through its clean filter."""
        os.utime(outer / "sub" / "s.txt", ns=(time.time_ns(), time.time_ns() + 10**9))

    stat_dirty()
    plain(outer, "status")
    assert {path.name for path in marks.iterdir()} == {"submodule-clean"}
    (marks / "submodule-clean").unlink()

    stat_dirty()
    seen, diff = await LocalTrees().record(outer)
    assert seen.work.gate
    assert diff is not None
    assert list(marks.iterdir()) == []


async def test_the_callers_environment_never_reaches_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `GIT_DIR` naming another repository, a `GIT_INDEX_FILE`, a `GIT_CONFIG_PARAMETERS`
    configuring the filter the tree's attributes name, and a `GITHUB_TOKEN`: plain git obeys
    the first three; no git forge runs sees any of them (a `git` first on PATH records each
    one's environment)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    tree, other = tmp_path / "tree", tmp_path / "other"
    init(tree)
    (tree / ".gitattributes").write_text("*.txt filter=evil\n")
    (tree / "a.txt").write_text("one\n")
    plain(tree, "add", "-A")
    plain(tree, "commit", "-qm", "one")
    (tree / "a.txt").write_text("one\ntwo\n")
    init(other)
    plain(other, "commit", "-q", "--allow-empty", "-m", "other")
    plain(other, "branch", "-q", "-m", "elsewhere")
    clean = program(tmp_path / "bin", marks, "env-clean", "exec cat")
    caller = {
        "GIT_DIR": str(other / ".git"),
        "GIT_INDEX_FILE": str(tmp_path / "stray-index"),
        "GIT_CONFIG_PARAMETERS": f"'filter.evil.clean'='{clean}'",
        "GITHUB_TOKEN": "ghp_secret",
    }
    elsewhere = {**plain_env(), "GIT_DIR": caller["GIT_DIR"]}
    assert plain(tree, "rev-parse", "--abbrev-ref", "HEAD", env=elsewhere) == "elsewhere\n"
    stray = {**plain_env(), "GIT_INDEX_FILE": caller["GIT_INDEX_FILE"]}
    assert len(plain(tree, "status", "--porcelain", env=stray).splitlines()) == 4
    parameters = {**plain_env(), "GIT_CONFIG_PARAMETERS": caller["GIT_CONFIG_PARAMETERS"]}
    plain(tree, "diff", "HEAD", env=parameters)
    assert {path.name for path in marks.iterdir()} == {"env-clean"}
    (marks / "env-clean").unlink()

    real = shutil.which("git")
    assert real is not None
    log = tmp_path / "environments"
    spy = tmp_path / "spy"
    spy.mkdir()
    (spy / "git").write_text(f'#!/bin/sh\nenv >> "{log}"\necho . >> "{log}"\nexec {real} "$@"\n')
    (spy / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{spy}:{os.environ['PATH']}")
    for name, value in caller.items():
        monkeypatch.setenv(name, value)

    trees = LocalTrees()
    seen, diff = await trees.record(tree)
    commit = await trees.commit(tree, "HEAD")
    assert commit is not None
    assert await trees.blob(tree, commit, "a.txt", 100) == (4, b"one\n")
    assert await git_folders(tree) == [tree / ".git"]
    assert await forge_git.resolve_commit(tree, "HEAD") == commit
    assert (seen.work.branch, seen.work.changed, diff is not None) == ("main", 1, True)
    assert list(marks.iterdir()) == []
    environments = log.read_text()
    assert environments.count("\n.\n") >= 8
    for name in caller:
        assert f"\n{name}=" not in f"\n{environments}"


def spied_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `git` first on PATH that records each command line; the log's path."""
    real = shutil.which("git")
    assert real is not None
    log = tmp_path / "commands"
    log.write_text("")
    spy = tmp_path / "spy"
    spy.mkdir()
    (spy / "git").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec {real} "$@"\n')
    (spy / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{spy}:{os.environ['PATH']}")
    return log


def forge_runs(log: Path) -> int:
    """How many gits forge ran (the test's own plain gits do not pass `--no-pager`)."""
    return sum(line.startswith("--no-pager ") for line in log.read_text().splitlines())


def settled_cache() -> forge_git.DriverCache:
    """A cache whose clock runs a minute ahead, so every file the test wrote looks settled."""
    return forge_git.DriverCache(PinnedClock(time.time() + 60))


def drivers(config: forge_git.Config) -> set[str]:
    return {key for key, _ in config if not key.endswith(".required")}


async def test_a_kept_read_runs_no_git_until_a_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "tree"
    init(tree)
    plain(tree, "config", "filter.evil.clean", "evil")
    log = spied_git(tmp_path, monkeypatch)
    cache = settled_cache()
    first = await cache.overrides(tree)
    assert await cache.overrides(tree) == first
    assert drivers(first) == {"filter.evil.clean"}
    assert forge_runs(log) == 2  # rev-parse and config, once
    plain(tree, "config", "diff.evil.textconv", "evil")
    assert drivers(await cache.overrides(tree)) == {"filter.evil.clean", "diff.evil.textconv"}
    assert forge_runs(log) == 4


async def test_a_file_changed_as_git_read_it_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A configuration written within `RACY_S` of the read may be rewritten with an equal stat
    (same size, mtime set back, within one timestamp tick): such a read is never kept."""
    tree = tmp_path / "tree"
    init(tree)
    log = spied_git(tmp_path, monkeypatch)
    config = tree / ".git" / "config"
    cache = forge_git.DriverCache(PinnedClock(config.stat().st_ctime))
    await cache.overrides(tree)
    await cache.overrides(tree)
    assert forge_runs(log) == 4


def change_config(tree: Path, how: str) -> None:
    """Add a driver `late` by way of `how`; the tree was prepared by `prepare_config`."""
    git_dir = tree / ".git"
    if how == "config":
        plain(tree, "config", "filter.late.clean", "late")
    elif how == "include":
        plain(tree, "config", "--file", str(git_dir / "inc"), "filter.late.clean", "late")
    elif how == "include created":
        plain(tree, "config", "--file", str(git_dir / "later"), "filter.late.clean", "late")
    elif how == "worktree":
        plain(tree, "config", "--worktree", "filter.late.clean", "late")
    elif how == "onbranch":
        plain(tree, "checkout", "-q", "-b", "other")
    elif how == "renamed over":
        spare = tree.parent / "spare"
        shutil.copy2(git_dir / "config", spare)
        plain(tree, "config", "--file", str(spare), "filter.late.clean", "late")
        os.utime(spare, ns=(0, 0))
        spare.rename(git_dir / "config")
    else:
        spare = tree.parent / "elsewhere"
        init(spare)
        plain(spare, "config", "filter.late.clean", "late")
        shutil.rmtree(git_dir)
        (spare / ".git").rename(git_dir)


def prepare_config(tree: Path, how: str) -> None:
    init(tree)
    plain(tree, "commit", "-q", "--allow-empty", "-m", "one")
    if how == "include":
        plain(tree, "config", "include.path", "inc")
        (tree / ".git" / "inc").write_text("")
    elif how == "include created":
        plain(tree, "config", "include.path", "later")
    elif how == "worktree":
        plain(tree, "config", "extensions.worktreeConfig", "true")
    elif how == "onbranch":
        plain(tree, "config", "includeIf.onbranch:other.path", "branch.inc")
        plain(tree, "config", "--file", str(tree / ".git" / "branch.inc"), "filter.late.clean", "x")


@pytest.mark.parametrize(
    "how",
    [
        "config",
        "include",
        "include created",
        "worktree",
        "onbranch",
        "renamed over",
        ".git swapped",
    ],
)
async def test_a_driver_configured_after_a_kept_read_is_made_inert(
    tmp_path: Path, how: str
) -> None:
    tree = tmp_path / "tree"
    prepare_config(tree, how)
    cache = settled_cache()
    assert await cache.overrides(tree) == ()
    change_config(tree, how)
    assert drivers(await cache.overrides(tree)) == {"filter.late.clean"}


async def test_no_repository_is_kept_until_one_appears(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b"
    folder.mkdir(parents=True)
    cache = settled_cache()
    assert await cache.overrides(folder) == ()
    init(tmp_path / "a")
    plain(tmp_path / "a", "config", "filter.late.clean", "late")
    assert drivers(await cache.overrides(folder)) == {"filter.late.clean"}


def test_a_driver_named_with_an_equals_sign_is_one_key() -> None:
    """`-c filter.a=b.clean=` would set `filter.a`; the pairs go through GIT_CONFIG_COUNT."""
    config = forge_git.inert(["filter.a=b.clean", "diff.x.textconv", "merge.m.driver"])
    assert config == (
        ("diff.x.textconv", "cat"),
        ("filter.a=b.clean", ""),
        ("merge.m.driver", "false"),
        ("filter.a=b.required", "false"),
    )
    env = forge_git.profile_env(config=config)
    count = int(env["GIT_CONFIG_COUNT"])
    pairs = [(env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"]) for n in range(count)]
    assert pairs[-4:] == list(config)


def test_a_listing_names_drivers_includes_and_the_files_they_came_from() -> None:
    raw = (
        b"file:.git/config\0include.path\nextra.cfg\0"
        b"file:.git/extra.cfg\0filter.x.clean\nfoo\0"
        b"file:.git/config\0includeif.onbranch:evil.path\n/abs/evil.cfg\0"
        b"command line:\0diff.y.textconv\ncat\0"
    )
    listing = forge_git.parse_listing(raw)
    assert listing.drivers == {"filter.x.clean", "diff.y.textconv"}
    assert listing.includes == (
        (".git/config", "include.path", "extra.cfg"),
        (".git/config", "includeif.onbranch:evil.path", "/abs/evil.cfg"),
    )
    assert listing.origins == {".git/config", ".git/extra.cfg"}
    top = Path("/top")
    assert forge_git.include_target(".git/config", "extra.cfg", top) == top / ".git/extra.cfg"
    assert forge_git.include_target(".git/config", "/abs/x", top) == Path("/abs/x")
    assert forge_git.include_target("/g/config", "../x", top) == Path("/g/../x")
    assert forge_git.include_target(".git/config", "~/x", top) is None
    assert forge_git.include_target(".git/config", "%(prefix)/x", top) is None
    assert forge_git.include_target("", "x", top) is None


def test_only_files_unchanged_for_racy_s_before_the_read_are_settled() -> None:
    read_at = 1_000.0
    old = int((read_at - forge_git.RACY_S - 0.001) * 1e9)
    recent = int((read_at - forge_git.RACY_S + 0.001) * 1e9)
    folder = (1, 2, 3)
    assert forge_git.settled([(1, 2, 3, 4, old), None, folder], read_at)
    assert not forge_git.settled([(1, 2, 3, 4, old), (1, 2, 3, 4, recent)], read_at)


def test_discovery_gives_up_inside_a_git_folder(tmp_path: Path) -> None:
    inner = tmp_path / "r" / ".git" / "refs"
    inner.mkdir(parents=True)
    assert forge_git.discovery(inner, None) is None
    top = tmp_path.resolve() / "r"
    assert forge_git.discovery(top / "sub", top) == [
        top / "sub",
        top / "sub",
        top / "sub" / ".git",
        top,
        top / ".git",
    ]
