"""The attempt's git checkouts: its own source, the recipe's workspace, the views, a capture.

Every git call runs under forge's hardened profile (`forge.git`), and never on a git folder a
recipe could have written: the attempt source (`<work>/source`) is forge's and no sandbox ever
mounts it writable; the recipe's workspace is a separate clone of it that the recipe owns, and
forge reads the workspace's files only through the source's git folder and an index of its own
(`--git-dir`/`--work-tree`), so whatever the recipe writes into the workspace's `.git`
(`config`, hooks, `info/`, objects, alternates) is never read outside the sandbox. The captured
diff depends only on the pinned bytes. `--source` is only ever read: fetched from, never written.
An attempt source names neither `--source` nor a local origin: its `origin` is a network URL or
absent, and no FETCH_HEAD records the fetch.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from forge import git as forge_git
from forge.attempt.errors import LabRefusal
from forge.git import GitError

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


async def git(
    cwd: Path, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None
) -> bytes:
    """git under the profile with the Lab's fixed identity (commits are reproducible)."""
    return await forge_git.run(cwd, *args, env={**_FIXED_IDENTITY, **(env or {})}, stdin=stdin)


def _on(git_dir: Path, work_tree: Path) -> tuple[str, ...]:
    """Options that point git at forge's git folder and a tree, whatever the tree holds."""
    return (f"--git-dir={git_dir}", f"--work-tree={work_tree}")


@dataclass(frozen=True)
class SourceFacts:
    toplevel: str
    origin: str | None
    """The URL an attempt source's `origin` gets: never a local path (see `public_origin`)."""
    local_origins: tuple[str, ...] = ()
    """Local repositories on the way to `origin`: the sandbox hides them."""
    stores: tuple[str, ...] = ()
    """Where `--source`'s history also lives: the main repository of a linked worktree, and the
    object stores its alternates borrow from (the sandbox hides them too)."""


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
    return SourceFacts(
        toplevel=toplevel, origin=public, local_origins=local, stores=await _stores(source)
    )


async def _stores(source: Path) -> tuple[str, ...]:
    """The common git folder's repository when it lies outside the checkout (a linked
    worktree's main repository), and every alternate object store, as realpaths."""
    common = Path(
        (await git(source, "rev-parse", "--path-format=absolute", "--git-common-dir"))
        .decode()
        .strip()
    )
    return await asyncio.to_thread(_store_paths, common)


def _store_paths(common: Path) -> tuple[str, ...]:
    found = [common.parent if common.name == ".git" else common]
    try:
        lines = (common / "objects" / "info" / "alternates").read_text("utf-8").splitlines()
    except OSError:
        lines = []
    found += [common / "objects" / line.strip() for line in lines if line.strip()]
    return tuple(
        sorted({os.path.realpath(path) for path in found if not str(path).startswith("#")})
    )


async def has_commit(source: Path, commit: str) -> bool:
    try:
        await git(source, "cat-file", "-e", f"{commit}^{{commit}}")
    except GitError:
        return False
    return True


async def make_attempt_source(source: Path, commit: str, dest: Path) -> None:
    """A fresh non-bare repository at `dest` holding only `commit` (shallow, detached, no refs,
    no remote): forge's own, never mounted writable in a sandbox."""
    await git(dest.parent, "init", "-q", "--template=", str(dest))
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
    # HEAD is written directly: a git process fewer per attempt.
    await asyncio.to_thread((dest / ".git" / "HEAD").write_text, commit + "\n")


async def make_workspace(source: Path, commit: str, dest: Path, origin: str | None) -> None:
    """The recipe's tree at `dest`: a clone of the attempt source with a `.git` of its own
    (objects copied, never hard-linked, so nothing the recipe writes reaches the source), checked
    out detached at `commit`, with `origin` (a network URL, fetching nothing) or no remote."""
    await git(
        dest.parent, "-c", "protocol.file.allow=always", "clone", "-q", "--no-hardlinks",
        "--no-checkout", "--template=", str(source), str(dest),
    )  # fmt: skip
    await asyncio.to_thread(_configure_workspace, dest / ".git", origin)
    await git(dest, "checkout", "-q", "--detach", commit)


def _configure_workspace(git_dir: Path, origin: str | None) -> None:
    """The clone's config rewritten whole: hooks off, and `origin` with the fetch refspec that
    matches nothing, or no remote (values quoted as git-config(1) reads them)."""
    lines = ["[core]", "\trepositoryformatversion = 0", "\tbare = false", "\thooksPath = /dev/null"]
    if origin is not None:
        if "\n" in origin:
            raise GitError(["config"], f"an origin URL holds a newline: {origin!r}")
        lines += [
            '[remote "origin"]',
            f"\turl = {_quoted(origin)}",
            f"\tfetch = {NO_FETCH_REFSPEC}",
        ]
    (git_dir / "config").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for leftover in ("packed-refs", "logs"):
        path = git_dir / leftover
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    shutil.rmtree(git_dir / "refs" / "remotes", ignore_errors=True)


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

    def outside(self, allowed: tuple[str, ...]) -> list[str]:
        """The changed paths not in `allowed`, sorted: the scope violations."""
        permitted = set(allowed)
        return sorted(path for _, path in self.changes if path not in permitted)


async def content_tree(
    repo: Path,
    tree: Path,
    start: str,
    index_file: Path,
    *,
    untracked: bool,
    stat_index: Path | None,
) -> str:
    """The tree of `tree`'s files on disk, tracked as in `start` (untracked files added too when
    `untracked`), read through `repo`'s git folder and a private index: neither a `.git` in
    `tree` nor its index is ever read.

    With `stat_index` (a copy of the tree's index taken when forge made the tree, so no command
    run since could have changed it) the private index starts from it and `read-tree -m` resets
    it to `start` keeping the stat data of entries whose content matches: `add` then hashes only
    the files whose stat changed, not the whole tree."""
    env = {"GIT_INDEX_FILE": str(index_file)}
    on = _on(repo / ".git", tree)
    try:
        if stat_index is None:
            raise FileNotFoundError("no stat index")
        await asyncio.to_thread(shutil.copy2, stat_index, index_file)
        await git(repo, *on, "read-tree", "-m", start, env=env)
    except (OSError, GitError):
        await git(repo, *on, "read-tree", start, env=env)
    scope = ("-A", "--", ".") if untracked else ("-u", "--", ".")
    await git(repo, *on, "-c", "core.excludesFile=/dev/null", "add", *scope, env=env)
    return (await git(repo, *on, "write-tree", env=env)).decode().strip()


async def save_index(tree: Path, dest: Path) -> None:
    """Keep a copy of a tree's own index as forge wrote it (its mtime too, by which git tells
    racily clean entries: a same-size change in the second the index was written is hashed).
    Called only before any command has run in the tree."""
    await asyncio.to_thread(shutil.copy2, _own_index(tree), dest)


def _own_index(tree: Path) -> Path:
    """A tree's index: `<gitdir>/index`, a linked worktree's `.git` file naming the gitdir."""
    dot_git = tree / ".git"
    if dot_git.is_file():
        gitdir = dot_git.read_text().removeprefix("gitdir:").strip()
        return (tree / gitdir).resolve() / "index"
    return dot_git / "index"


async def capture_tree(
    source: Path, workspace: Path, base: str, index_file: Path, stat_index: Path | None = None
) -> Capture:
    """Snapshot the workspace's content into the attempt source (forge's), as a commit on
    `base`: the recipe's own git folder and index are irrelevant."""
    tree = await content_tree(
        source, workspace, base, index_file, untracked=True, stat_index=stat_index
    )
    commit = (
        (await git(source, "commit-tree", tree, "-p", base, "-m", "forge capture")).decode().strip()
    )
    return Capture(commit=commit, changes=await _changes(source, base, commit))


async def _changes(repo: Path, base: str, commit: str) -> tuple[tuple[str, str], ...]:
    raw = await git(repo, "diff", "--name-status", "--no-renames", "-z", base, commit)
    fields = raw.decode("utf-8", errors="surrogateescape").split("\0")
    return tuple(
        sorted(
            ((fields[i], fields[i + 1]) for i in range(0, len(fields) - 1, 2)), key=lambda c: c[1]
        )
    )


async def scoped_commit(
    repo: Path, base: str, capture: Capture, allowed: tuple[str, ...], index_file: Path
) -> str:
    """The captured commit with every change outside `allowed` undone: what verification runs,
    so nothing the recipe wrote outside its allowed files reaches a verifying process."""
    permitted = set(allowed)
    if all(path in permitted for _, path in capture.changes):
        return capture.commit
    env = {"GIT_INDEX_FILE": str(index_file)}
    try:
        await git(repo, "read-tree", base, env=env)
        kept = [path for status, path in capture.changes if path in permitted and status != "D"]
        gone = [path for status, path in capture.changes if path in permitted and status == "D"]
        if kept:
            entries = await git(repo, "ls-tree", "-z", capture.commit, "--", *kept)
            await git(repo, "update-index", "-z", "--index-info", env=env, stdin=entries)
        if gone:
            await git(repo, "update-index", "--force-remove", "--", *gone, env=env)
        tree = (await git(repo, "write-tree", env=env)).decode().strip()
    finally:
        await asyncio.to_thread(index_file.unlink, missing_ok=True)
    message = "forge capture, allowed files only"
    return (await git(repo, "commit-tree", tree, "-p", base, "-m", message)).decode().strip()


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
