"""Git for replay: reading `--source`, throwaway worktrees, and the history-free `<out>/source`.

`--source` is only read. Worktrees live in a scratch repository under `<out>` that borrows the
source's objects (an alternates file, nothing copied), created with hooks off like every git call
of the Lab. `<out>/source` is the opposite: a non-bare checkout holding only the tasks' base
commits, fetched shallow, so no recipe can read a merge commit, a PR branch or later history.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from forge.attempt.git import NO_FETCH_REFSPEC, add_worktree, git


async def parents(source: Path, commit: str) -> list[str]:
    words = (await git(source, "rev-list", "--parents", "-n", "1", commit)).decode().split()
    return words[1:]


async def merge_base(source: Path, first: str, second: str) -> str:
    return (await git(source, "merge-base", first, second)).decode().strip()


async def resolve_commit(source: Path, commit: str) -> str:
    return (await git(source, "rev-parse", "--verify", f"{commit}^{{commit}}")).decode().strip()


async def file_modes(source: Path, commit: str, paths: list[str]) -> dict[str, str]:
    """path -> git mode (`100644`, `120000` for a symbolic link, ...) at `commit`."""
    raw = await git(source, "ls-tree", "-z", commit, "--", *paths)
    modes = {}
    for entry in raw.decode("utf-8", errors="surrogateescape").split("\0"):
        if entry:
            meta, _, path = entry.partition("\t")
            modes[path] = meta.split()[0]
    return modes


async def blob(source: Path, commit: str, path: str) -> bytes:
    return await git(source, "cat-file", "blob", f"{commit}:{path}")


async def scratch_repo(source: Path, dest: Path) -> None:
    """An empty repository whose object store falls back to the source's (read-only use)."""
    common = (await git(source, "rev-parse", "--path-format=absolute", "--git-common-dir")).decode()
    objects = Path(common.strip()) / "objects"
    await git(dest.parent, "init", "-q", str(dest))
    await git(dest, "config", "core.hooksPath", "/dev/null")
    alternates = dest / ".git" / "objects" / "info" / "alternates"
    await asyncio.to_thread(alternates.write_text, f"{objects}\n")


async def worktree(scratch: Path, path: Path, commit: str) -> None:
    await add_worktree(scratch, path, commit)


async def drop_worktree(scratch: Path, path: Path) -> None:
    await asyncio.to_thread(shutil.rmtree, path, True)
    await git(scratch, "worktree", "prune")


async def history_free_source(
    source: Path, dest: Path, bases: list[tuple[str, str]], origin: str
) -> None:
    """`dest`: only the given base commits (`refs/replay/<name>`), shallow, detached at the first,
    a clean work tree, `origin` set with the no-op refspec, and no FETCH_HEAD."""
    await git(dest.parent, "init", "-q", str(dest))
    await git(dest, "config", "core.hooksPath", "/dev/null")
    for name, commit in bases:
        await git(
            dest,
            "-c",
            "protocol.file.allow=always",
            "fetch",
            "-q",
            "--depth=1",
            "--update-shallow",
            "--no-tags",
            "--no-write-fetch-head",
            f"file://{source}",
            f"{commit}:refs/replay/{name}",
        )
    await git(dest, "checkout", "-q", "--detach", bases[0][1])
    await git(dest, "remote", "add", "origin", origin)
    await git(dest, "config", "remote.origin.fetch", NO_FETCH_REFSPEC)
