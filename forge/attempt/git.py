"""Git for attempts: a throwaway source per attempt, worktrees in it, and a pinned-bytes capture.

Every git call runs with the caller's git configuration switched off (no system or global config,
`LC_ALL=C`, hooks disabled), so the captured diff depends only on the pinned bytes. `--source` is
only ever read: fetched from, never written. An attempt source names neither `--source` nor a
local origin: its `origin` is a network URL or absent, and no FETCH_HEAD records the fetch.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from forge.attempt.errors import LabRefusal
from forge.errors import InternalError

NO_FETCH_REFSPEC = "+refs/forge-none/*:refs/forge-none/*"
"""A refspec that matches nothing, so a stray bare `git fetch origin` fetches nothing."""
DIFF_CAP_BYTES = 5 * 1024 * 1024
_FIXED_IDENTITY = {
    "GIT_AUTHOR_NAME": "forge",
    "GIT_AUTHOR_EMAIL": "forge@localhost",
    "GIT_COMMITTER_NAME": "forge",
    "GIT_COMMITTER_EMAIL": "forge@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}


class GitError(InternalError):
    """A git command failed; the message holds its argv and stderr (where the input is at fault,
    the Lab refuses it as a `LabRefusal` instead)."""


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "HOME": "/nonexistent",
        **_FIXED_IDENTITY,
    }
    env.update(extra or {})
    return env


async def git(
    cwd: Path, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None
) -> bytes:
    proc = await asyncio.create_subprocess_exec(
        "git",
        "-c",
        "core.hooksPath=/dev/null",
        *args,
        cwd=cwd,
        env=env or git_env(),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await proc.communicate(stdin)
    except asyncio.CancelledError:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args)}: {err.decode(errors='replace').strip()}")
    return out


@dataclass(frozen=True)
class SourceFacts:
    toplevel: str
    origin: str | None
    """The URL an attempt source's `origin` gets: never a local path (see `public_origin`)."""
    local_origins: tuple[str, ...] = ()
    """Local repositories on the way to `origin`: the sandbox hides them."""


MAX_ORIGIN_HOPS = 8


def local_path(url: str, base: Path) -> Path | None:
    """The local repository a remote URL names; None for a network one (`https:`, `host:path`)."""
    if url.startswith("file://"):
        return Path(unquote(urlparse(url).path))
    if "://" in url:
        return None
    colon, slash = url.find(":"), url.find("/")
    if colon > 0 and (slash == -1 or colon < slash):
        return None
    return Path(os.path.normpath(base / os.path.expanduser(url)))


async def public_origin(toplevel: Path, origin: str | None) -> tuple[str | None, tuple[str, ...]]:
    """The first network URL on `--source`'s chain of origins, and the local repositories before it.

    A source cloned from a local clone has that clone's path as its origin, and the clone holds the
    full history (the answer): an attempt gets the clone's own origin URL instead, or none.
    """
    passed: list[str] = []
    base, url = toplevel, origin
    while url is not None and len(passed) < MAX_ORIGIN_HOPS:
        path = local_path(url, base)
        if path is None:
            return url, tuple(passed)
        passed.append(await asyncio.to_thread(os.path.realpath, path))
        try:
            url = (await git(path, "remote", "get-url", "origin")).decode().strip()
        except (GitError, OSError):
            url = None
        base = path
    return None, tuple(passed)


async def inspect_source(source: Path) -> SourceFacts:
    """Refuse a bare or non-git `--source`; return its top level and public origin URL."""
    bare_message = "--source must be a non-bare git checkout (replay writes <out>/source)"
    try:
        bare = (await git(source, "rev-parse", "--is-bare-repository")).strip()
    except (GitError, OSError):
        raise LabRefusal(f"{bare_message}: {source} is not a git repository") from None
    if bare == b"true":
        raise LabRefusal(bare_message)
    toplevel = (await git(source, "rev-parse", "--show-toplevel")).decode().strip()
    try:
        origin: str | None = (await git(source, "remote", "get-url", "origin")).decode().strip()
    except GitError:
        origin = None
    # git prints the top level with symbolic links resolved, so the digest sees one spelling.
    public, local = await public_origin(Path(toplevel), origin)
    return SourceFacts(toplevel=toplevel, origin=public, local_origins=local)


async def has_commit(source: Path, commit: str) -> bool:
    try:
        await git(source, "cat-file", "-e", f"{commit}^{{commit}}")
    except GitError:
        return False
    return True


async def make_attempt_source(source: Path, origin: str | None, commit: str, dest: Path) -> None:
    """A fresh non-bare repository at `dest` holding only `commit` (shallow, detached, no refs)."""
    await git(dest.parent, "init", "-q", str(dest))
    await git(
        dest,
        "-c",
        "protocol.file.allow=always",
        "fetch",
        "-q",
        "--depth=1",
        "--no-tags",
        "--no-write-fetch-head",
        f"file://{source}",
        commit,
    )
    # HEAD and the config are written directly: four git processes fewer per attempt.
    await asyncio.to_thread(_detach_and_configure, dest / ".git", commit, origin)


def _detach_and_configure(git_dir: Path, commit: str, origin: str | None) -> None:
    """A detached HEAD at `commit`, hooks off, and `origin` with the fetch refspec that matches
    nothing (values quoted as git-config(1) reads them)."""
    (git_dir / "HEAD").write_text(commit + "\n")
    lines = ["[core]", "\thooksPath = /dev/null"]
    if origin is not None:
        if "\n" in origin:
            raise GitError(f"an origin URL holds a newline: {origin!r}")
        lines += [
            '[remote "origin"]',
            f"\turl = {_quoted(origin)}",
            f"\tfetch = {NO_FETCH_REFSPEC}",
        ]
    with open(git_dir / "config", "a", encoding="utf-8") as config:
        config.write("\n".join(lines) + "\n")


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


async def add_worktree(repo: Path, path: Path, commit: str) -> None:
    await git(repo, "worktree", "add", "-q", "--detach", str(path), commit)


@dataclass(frozen=True)
class Capture:
    commit: str
    """A commit of the captured tree whose parent is the base, in the attempt source."""
    changes: tuple[tuple[str, str], ...]
    """(status, path) sorted by path; status A, M, D or T; a rename is D plus A."""


async def content_tree(
    tree: Path, start: str, index_file: Path, *, untracked: bool, stat_index: Path | None
) -> str:
    """The tree of `tree`'s files on disk, tracked as in `start` (untracked files added too when
    `untracked`), through a private index, so the tree's own index is irrelevant.

    With `stat_index` (forge's copy of the tree's index, taken when forge made the tree, so no
    command run since could have changed it) the private index starts from it and `read-tree -m`
    resets it to `start` keeping the stat data of entries whose content matches: `add` then
    hashes only the files whose stat changed, not the whole tree."""
    env = git_env({"GIT_INDEX_FILE": str(index_file)})
    try:
        if stat_index is None:
            raise FileNotFoundError("no stat index")
        await asyncio.to_thread(shutil.copy2, stat_index, index_file)
        await git(tree, "read-tree", "-m", start, env=env)
    except (OSError, GitError):
        await git(tree, "read-tree", start, env=env)
    scope = ("-A", "--", ".") if untracked else ("-u", "--", ".")
    await git(tree, "-c", "core.excludesFile=/dev/null", "add", *scope, env=env)
    return (await git(tree, "write-tree", env=env)).decode().strip()


async def save_index(tree: Path, dest: Path) -> None:
    """Keep a copy of a tree's own index as forge wrote it (its mtime too, by which git tells
    racily clean entries: a same-size change in the second the index was written is hashed)."""
    await asyncio.to_thread(shutil.copy2, _own_index(tree), dest)


def _own_index(tree: Path) -> Path:
    """A worktree's index: `<gitdir>/index`, its `.git` file naming the gitdir."""
    dot_git = tree / ".git"
    if dot_git.is_file():
        gitdir = dot_git.read_text().removeprefix("gitdir:").strip()
        return (tree / gitdir).resolve() / "index"
    return dot_git / "index"


async def capture_tree(
    workspace: Path, base: str, index_file: Path, stat_index: Path | None = None
) -> Capture:
    """Snapshot the workspace's content (a private index, so the harness's index is irrelevant)."""
    tree = await content_tree(workspace, base, index_file, untracked=True, stat_index=stat_index)
    commit = (
        (await git(workspace, "commit-tree", tree, "-p", base, "-m", "forge capture"))
        .decode()
        .strip()
    )
    raw = await git(workspace, "diff", "--name-status", "--no-renames", "-z", base, commit)
    fields = raw.decode("utf-8", errors="surrogateescape").split("\0")
    changes = sorted(
        ((fields[i], fields[i + 1]) for i in range(0, len(fields) - 1, 2)), key=lambda c: c[1]
    )
    return Capture(commit=commit, changes=tuple(changes))


async def unified_diff(repo: Path, base: str, commit: str) -> bytes:
    """The fixed, configuration-independent diff of acceptance table O-19."""
    return await git(
        repo,
        "-c",
        "core.quotePath=true",
        "diff",
        "--binary",
        "--full-index",
        "--no-renames",
        "--no-ext-diff",
        "--no-textconv",
        "--no-color",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        base,
        commit,
    )


def cap_diff(diff: bytes, cap: int = DIFF_CAP_BYTES) -> tuple[bytes, bool]:
    """Cut at the last newline that leaves room for the marker; mark how much was kept."""
    if len(diff) <= cap:
        return diff, False
    marker_room = 100
    cut = diff.rfind(b"\n", 0, cap - marker_room) + 1
    kept = diff[:cut]
    marker = f"# forge: diff truncated at {len(kept)} of {len(diff)} bytes\n".encode()
    return kept + marker, True


async def restore_from(view: Path, commit: str, paths: list[str]) -> None:
    """Put `paths` back to their content at `commit` in a worktree."""
    if paths:
        await git(view, "checkout", commit, "--", *paths)


async def list_files(repo: Path, commit: str) -> list[str]:
    raw = await git(repo, "ls-tree", "-r", "-z", "--name-only", commit)
    return [p for p in raw.decode("utf-8", errors="surrogateescape").split("\0") if p]
