"""One tree's watch: watchfiles' Rust `notify` (recursive, one thread per tree), and which
changes can move a work row.

A watch reports `ready` once it is up and `changed` after each burst that touches something a
work row reads: the tree's files, and inside a git folder only HEAD, the index, refs, packed-refs
and the *_HEAD marks (object writes and lock files are noise). A burst ends after `STEP_MS` of
quiet or `DEBOUNCE_MS` in all. Setting a recursive watch up holds the GIL for the whole walk of
the tree (about half a second for 20,000 files), one reason it runs in the tree worker.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from watchfiles._rust_notify import RustNotify

from forge.git import GitError
from forge.workers.trees.gitstate import git
from forge.workers.trees.protocol import WatchHeard

STEP_MS = 50
"""A burst of changes is over once this long passes without another."""
DEBOUNCE_MS = 300
"""A burst that never goes quiet is reported this often at most."""
GIT_MARKS = frozenset(
    {"HEAD", "index", "packed-refs", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD"}
)

Tell = Callable[[WatchHeard], None]


def relevant(path: str, git_folders: list[str]) -> bool:
    """Whether a change at `path` can move a work row (`git_folders` end with a slash)."""
    for folder in git_folders:
        if path.startswith(folder):
            inside = path[len(folder) :]
            if inside.endswith(".lock"):
                return False
            return inside in GIT_MARKS or inside.startswith("refs/")
    return True


async def git_folders(tree: Path) -> list[Path]:
    """The tree's own git folder and the common one (they differ for a linked worktree), read
    as every other git of the tree is (`gitstate.git`); none when git does not run there."""
    try:
        out = await git(tree, "rev-parse", "--absolute-git-dir", "--git-common-dir")
    except GitError:
        return []
    own, common = out.decode("utf-8", "surrogateescape").splitlines()[:2]
    return list(dict.fromkeys([Path(own), (tree / common).resolve()]))


def watch(ident: int, tree: Path, folders: list[Path], stop: threading.Event, tell: Tell) -> None:
    """One tree's watch (in a thread of its own), until `stop`."""
    marks = [str(folder) + "/" for folder in (folders or [tree / ".git"])]
    watched = [tree, *(folder for folder in folders if not folder.is_relative_to(tree))]
    try:
        notify = RustNotify([str(path) for path in watched], False, False, 0, True, True)
    except Exception as error:
        tell(WatchHeard(watch=ident, word="failed", why=f"{type(error).__name__}: {error}"))
        return
    try:
        tell(WatchHeard(watch=ident, word="ready"))
        while True:
            raw = notify.watch(DEBOUNCE_MS, STEP_MS, 0, stop)
            if raw == "stop":
                return
            if isinstance(raw, set) and any(relevant(path, marks) for _, path in raw):
                tell(WatchHeard(watch=ident, word="changed"))
    finally:
        notify.close()
