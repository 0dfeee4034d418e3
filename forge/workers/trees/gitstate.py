"""A seat's git state, read with the real git in subprocesses that never block the event loop.

`read_work` is the `work{branch, changed, gate}` row (home's project and agent rows); `scan` adds
the `git` layer (the uncommitted files, ahead/behind and the ahead chain against the base); and
`read_diff` the bounded hunks of both layers. A seat's tree is a repository forge does not own
(an agent may have written its configuration), so every git runs under `forge.git`'s profile with
the tree's own filter, diff and merge drivers made inert (`driver_overrides`), never converts text
(`--no-textconv`), never runs an external diff (`--no-ext-diff`), and never looks inside a
submodule's work tree (`--ignore-submodules=dirty`: that would run a `git status` there, under
the submodule's own drivers). It also runs with `GIT_OPTIONAL_LOCKS=0`, so a read never rewrites
the index (which would wake the tree's own watch), under a 30 s bound, and is killed if its
reader stops early or is cancelled. The base is the branch's upstream, else `origin/HEAD`, else a
local `main` or `master`; it is never fetched, so a remote-tracking base is `unverified`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import msgspec

from forge.git import Config, GitError, driver_overrides, failure, process, run
from forge.wire.git import (
    COMMITS_MAX,
    DIFF_FILES_MAX,
    FILE_BYTES_MAX,
    NO_GIT,
    Ahead,
    Base,
    Clean,
    Diff,
    DiffLayer,
    GitLayer,
    ScanFailed,
    Work,
)
from forge.workers.trees.gitdiff import DiffReader, untracked_file
from forge.workers.trees.gitparse import (
    LOG_FORMAT,
    REFS_FORMAT,
    Counted,
    Entry,
    StatusRead,
    ahead,
    parse_numstat,
    parse_status,
    pick_base,
    worktree,
)
from forge.workers.trees.protocol import Seen

STREAM_BUDGET = 16 * 1024 * 1024
"""The most patch text read for one diff layer; past it the layer is capped."""
CHUNK = 64 * 1024
_READS = (("core.quotePath", "false"), ("color.ui", "never"))
_ENV = {"GIT_OPTIONAL_LOCKS": "0"}
_SAFE = ("--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty")
"""For every diff and log: no program the tree's configuration names, no git inside a submodule."""
_LOG = ("--raw", "--numstat", "-M", *_SAFE, f"--max-count={COMMITS_MAX}")
_PATCH = ("--no-color", *_SAFE, "-M", "--src-prefix=a/", "--dst-prefix=b/")


@contextlib.asynccontextmanager
async def _git_process(
    directory: Path, args: tuple[str, ...], *, stdin: bool = False
) -> AsyncIterator[asyncio.subprocess.Process]:
    """A running git in a seat's tree, killed and reaped when the block ends however it ends."""
    config = await _config(directory)
    async with process(directory, *args, env=_ENV, config=config, stdin=stdin) as proc:
        yield proc


async def git(directory: Path, *args: str, stdin: bytes | None = None) -> bytes:
    """The output of a git in a seat's tree that succeeded, else `GitError`."""
    return await run(directory, *args, env=_ENV, config=await _config(directory), stdin=stdin)


async def _config(directory: Path) -> Config:
    """The reads' output settings and the tree's drivers made inert (`GitError` when git cannot
    list them: then nothing runs there)."""
    return (*_READS, *await driver_overrides(directory))


async def git_lines(directory: Path, *args: str, feed: Callable[[bytes], bool]) -> bool:
    """Feed git's output line by line until `feed` says stop or `STREAM_BUDGET` is read; True
    when git's whole output was read."""
    async with _git_process(directory, args) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        pending, read = b"", 0
        while chunk := await proc.stdout.read(CHUNK):
            read += len(chunk)
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            for line in lines:
                if not feed(line):
                    return False
            if read >= STREAM_BUDGET:
                return False
        if pending and not feed(pending):
            return False
        err = await proc.stderr.read()
        if await proc.wait() != 0:
            raise failure(args, proc.returncode, err)
    return True


async def _status(directory: Path) -> StatusRead | None:
    try:
        out = await git(
            directory, "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all",
            "--ignore-submodules=dirty",
        )  # fmt: skip
    except GitError:
        return None
    return parse_status(out.decode("utf-8", "replace"))


async def read_work(directory: Path) -> Work:
    """The work row at `directory`; a missing directory or no repository is `gate: false`."""
    status = await _status(directory)
    return status.work if status is not None else NO_GIT


class Scan(msgspec.Struct, frozen=True):
    """One read of a tree: the rows a client draws, and what its diff is read against."""

    work: Work
    git: GitLayer | None
    entries: list[Entry]
    head: str
    """`HEAD`, or the empty tree while the branch has no commit."""
    base_ref: str | None

    @property
    def seen(self) -> Seen:
        return Seen(self.work, self.git)


NO_SCAN = Scan(NO_GIT, None, [], "HEAD", None)
"""A tree git does not run in."""


async def scan(directory: Path) -> Scan:
    """The work row and the git layer of the tree at `directory` (no layer when git cannot run
    there); a part git could not read is left out rather than failing the scan."""
    status, base = await asyncio.gather(_status(directory), _base(directory))
    if status is None:
        return NO_SCAN
    try:
        head = "HEAD" if status.born else (await _empty_tree(directory))
    except GitError:
        return Scan(status.work, None, status.entries, "HEAD", None)
    base = base if status.born else None
    counted, (measured, base_error) = await asyncio.gather(
        _counted(directory, head, status.entries),
        _ahead(directory, base[0] if base else None),
    )
    layer = GitLayer(
        default_branch=_short(base[0]) if base else None,
        worktree=worktree(status.entries, counted),
        ahead=measured,
        base=base[1] if base else None,
        base_error=base_error,
    )
    return Scan(status.work, layer, status.entries, head, base[0] if base else None)


async def _counted(directory: Path, head: str, entries: list[Entry]) -> list[Counted]:
    """The uncommitted files' line counts against `head` (none when git cannot count them)."""
    if not entries:
        return []
    try:
        out = await git(directory, "diff", head, "--numstat", "-z", "-M", *_SAFE)
    except GitError:
        return []
    return parse_numstat(out.decode("utf-8", "replace"))


async def _empty_tree(directory: Path) -> str:
    out = await git(directory, "hash-object", "-t", "tree", "--stdin", stdin=b"")
    return out.decode().strip()


async def _base(directory: Path) -> tuple[str, Base] | None:
    """The ref the branch is measured against (one git), and whether it is local or
    remote-tracking."""
    try:
        refs = await git(
            directory, "for-each-ref", f"--format={REFS_FORMAT}", "refs/heads",
            "refs/remotes/origin/HEAD",
        )  # fmt: skip
    except GitError:
        return None
    ref = pick_base(refs.decode("utf-8", "replace"))
    if ref is None:
        return None
    return ref, "unverified" if ref.startswith("refs/remotes/") else "local"


def _short(ref: str) -> str:
    return ref.removeprefix("refs/heads/").removeprefix("refs/remotes/")


async def _ahead(directory: Path, base: str | None) -> tuple[Ahead | None, str | None]:
    """The branch against `base`, or git's words for why it could not be measured."""
    if base is None:
        return None, None
    span = f"{base}...HEAD"
    try:
        counts, log, numstat = await asyncio.gather(
            git(directory, "rev-list", "--left-right", "--count", span),
            git(directory, "log", "-z", f"--format={LOG_FORMAT}", *_LOG, f"{base}..HEAD"),
            git(directory, "diff", "--raw", "--numstat", "-z", "-M", *_SAFE, span),
        )
    except GitError as failed:
        return None, failed.why
    return ahead(*(part.decode("utf-8", "replace") for part in (counts, log, numstat))), None


async def read_diff(directory: Path, found: Scan) -> Diff | None:
    """Both diff layers of a scanned tree, bounded; None when git does not run there."""
    if found.git is None:
        return None
    layer = found.git
    work = await _worktree_diff(directory, found) if layer.worktree else Clean()
    branch: DiffLayer | None = None
    if found.base_ref is not None:
        branch = Clean()
        if layer.ahead is not None and layer.ahead.commit_count:
            branch = await _patch(directory, DiffReader(), f"{found.base_ref}...HEAD")
    return Diff(worktree=work, branch_ahead=branch, base=layer.base)


async def _patch(
    directory: Path, reader: DiffReader, *spec: str, files_total: int | None = None
) -> DiffLayer:
    try:
        whole = await git_lines(directory, "diff", *_PATCH, *spec, feed=reader.feed)
    except GitError as failed:
        return ScanFailed(why=failed.why)
    if not whole and not reader.full:
        reader.capped_bytes = True
    return reader.layer(files_total)


async def _worktree_diff(directory: Path, found: Scan) -> DiffLayer:
    reader = DiffReader()
    tracked = await _patch(directory, reader, found.head, files_total=len(found.entries))
    if isinstance(tracked, ScanFailed) or reader.full:
        return tracked
    untracked = [e.path for e in found.entries if e.status == "untracked"][:DIFF_FILES_MAX]
    for path, data, whole in await asyncio.to_thread(_read_heads, directory, untracked):
        file, size = untracked_file(path, data, whole=whole)
        if not reader.add(file, size):
            break
    return reader.layer(len(found.entries))


def _read_heads(directory: Path, paths: list[str]) -> list[tuple[str, bytes, bool]]:
    """The first bytes of each untracked file (a symlink's target, as git stores one), and
    whether that was all of it; a file that vanished or cannot be read is left out."""
    heads = []
    for path in paths:
        where = directory / path
        try:
            if where.is_symlink():
                heads.append((path, os.readlink(where).encode(), True))
                continue
            fd = os.open(where, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            data = os.read(fd, FILE_BYTES_MAX + 1) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        except OSError:
            continue
        finally:
            os.close(fd)
        heads.append((path, data[:FILE_BYTES_MAX], len(data) <= FILE_BYTES_MAX))
    return heads


async def resolve_commit(directory: Path, revision: str) -> str:
    """The commit id `revision` names, resolved before git reads anything with it: after
    `--end-of-options`, so a string shaped like an option is only ever a (missing) revision."""
    spec = f"{revision}^{{commit}}"
    out = await git(directory, "rev-parse", "--verify", "--quiet", "--end-of-options", spec)
    return out.decode("ascii", "replace").strip()


async def read_blob(directory: Path, commit: str, path: str, limit: int) -> tuple[int, bytes]:
    """The size of `path` at `commit` (asked first, `git cat-file --batch-check`) and its first
    `limit` bytes; `GitError` in words when it is no file there."""
    asked = f"{commit}:./{path}"
    answer = await git(directory, "cat-file", "--batch-check", stdin=f"{asked}\n".encode())
    fields = answer.decode("utf-8", "replace").split()
    if len(fields) != 3 or fields[-1] == "missing":
        raise GitError(("cat-file", asked), f"{path} does not exist at {commit[:12]}")
    oid, kind, size = fields
    if kind != "blob":
        raise GitError(("cat-file", asked), f"{path} is a {kind} at {commit[:12]}, not a file")
    async with _git_process(directory, ("cat-file", "blob", oid)) as proc:
        assert proc.stdout is not None
        chunks, read = [], 0
        while read < limit and (chunk := await proc.stdout.read(min(CHUNK, limit - read))):
            chunks.append(chunk)
            read += len(chunk)
    return int(size), b"".join(chunks)


class LocalTrees:
    """Every git read of a seat's tree, run by this process (the tree worker's host; a test)."""

    async def work(self, directory: Path) -> Work:
        return await read_work(directory)

    async def scan(self, directory: Path) -> Seen:
        return (await scan(directory)).seen

    async def record(self, directory: Path) -> tuple[Seen, Diff | None]:
        found = await scan(directory)
        return found.seen, await read_diff(directory, found)

    async def commit(self, directory: Path, revision: str) -> str | None:
        try:
            return await resolve_commit(directory, revision)
        except GitError:
            return None

    async def blob(self, directory: Path, commit: str, path: str, limit: int) -> tuple[int, bytes]:
        return await read_blob(directory, commit, path, limit)
