"""Git for replay: reading `--source`, throwaway worktrees, and the history-free `<out>/source`.

`--source` is only read. Worktrees live in a scratch repository under `<out>` that borrows the
source's objects (an alternates file, nothing copied), created with hooks off. `<out>/source` is
the opposite: a non-bare checkout holding only the tasks' base commits, fetched shallow, so no
recipe can read a merge commit, a PR branch or later history.

Every git runs under `forge.git`'s profile. `--source` is a repository forge does not own, and the
scratch repository's worktrees are handed to the repository's own tests, so a git in either runs
with their filter, diff and merge drivers made inert (`run_foreign`); `<out>/source` is
forge's from `init` to its checkout.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from forge.attempt.checkouts import NO_FETCH_REFSPEC
from forge.git import run, run_foreign


async def parents(source: Path, commit: str) -> list[str]:
    words = (await run_foreign(source, "rev-list", "--parents", "-n", "1", commit)).decode().split()
    return words[1:]


async def merge_base(source: Path, first: str, second: str) -> str:
    return (await run_foreign(source, "merge-base", first, second)).decode().strip()


async def file_modes(source: Path, commit: str, paths: list[str]) -> dict[str, str]:
    """path -> git mode (`100644`, `120000` for a symbolic link, ...) at `commit`."""
    raw = await run_foreign(source, "ls-tree", "-z", commit, "--", *paths)
    modes = {}
    for entry in raw.decode("utf-8", errors="surrogateescape").split("\0"):
        if entry:
            meta, _, path = entry.partition("\t")
            modes[path] = meta.split()[0]
    return modes


async def blob(source: Path, commit: str, path: str) -> bytes:
    return await run_foreign(source, "cat-file", "blob", f"{commit}:{path}")


async def scratch_repo(source: Path, dest: Path) -> None:
    """An empty repository whose object store falls back to the source's (read-only use)."""
    common = (
        await run_foreign(source, "rev-parse", "--path-format=absolute", "--git-common-dir")
    ).decode()
    objects = Path(common.strip()) / "objects"
    await run(dest.parent, "init", "-q", str(dest))
    await run(dest, "config", "core.hooksPath", "/dev/null")
    alternates = dest / ".git" / "objects" / "info" / "alternates"
    await asyncio.to_thread(alternates.write_text, f"{objects}\n")


async def worktree(scratch: Path, path: Path, commit: str) -> None:
    await run_foreign(scratch, "worktree", "add", "-q", "--detach", str(path), commit)


async def drop_worktree(scratch: Path, path: Path) -> None:
    await asyncio.to_thread(shutil.rmtree, path, True)
    await run_foreign(scratch, "worktree", "prune")


async def history_free_source(
    source: Path, dest: Path, bases: list[tuple[str, str]], origin: str
) -> None:
    """`dest`: only the given base commits (`refs/replay/<name>`), shallow, detached at the first,
    a clean work tree, `origin` set with the no-op refspec, and no FETCH_HEAD.

    The fetch starts `git upload-pack` in `--source` with `GIT_CONFIG_COUNT` unset (git clears it
    for a local transport), so upload-pack reads `--source`'s own configuration: it runs no program
    a repository's configuration names (its one, `uploadpack.packObjectsHook`, is read only from
    system, global and command-line configuration, which the profile's environment leaves out)."""
    await run(dest.parent, "init", "-q", str(dest))
    await run(dest, "config", "core.hooksPath", "/dev/null")
    for name, commit in bases:
        await run(
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
    await run(dest, "checkout", "-q", "--detach", bases[0][1])
    await run(dest, "remote", "add", "origin", origin)
    await run(dest, "config", "remote.origin.fetch", NO_FETCH_REFSPEC)
