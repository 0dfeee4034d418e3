"""`work_changed{key, work, git}`: a held seat's tree is watched, and its movement pushed.

A tree is watched while a connection holds the session of a seat working in it (several seats of
one project share one watch). The watch is inotify through `watchfiles` (Rust's `notify`, one
thread per tree, no polling loop), debounced: a burst of writes waits until `STEP_MS` pass quietly
or `DEBOUNCE_MS` in all, then one scan runs (git in subprocesses, `gitwork.scan`). Inside a git
folder only what moves the row counts (HEAD, the index, refs, packed-refs, the *_HEAD marks), so
object writes and lock files wake nothing; a linked worktree's git folders are watched too.

A scan is pushed to a seat, on its counter and to home, unless it is the one thing every holder of
the seat was told (`SeatState.told`: the snapshots taken since the last push, or that push). The
watch is set up before its first scan, so a change between the subscribe's snapshot and the watch
is caught by that scan and a later one by the watch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path

from watchfiles import Change, awatch

from forge.logs import get_logger
from forge.supervisor.core import Supervisor
from forge.supervisor.gitwork import GitFailed, git, scan
from forge.wire.seats import Seat, SessionSubject, Subject

log = get_logger(__name__)

STEP_MS = 50
"""A burst of changes is over once this long passes without another."""
DEBOUNCE_MS = 300
"""A burst that never goes quiet is scanned this often at most."""
GIT_MARKS = frozenset(
    {"HEAD", "index", "packed-refs", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD"}
)


def install(supervisor: Supervisor) -> GitWatch:
    watch = GitWatch(supervisor)
    supervisor.on_held(watch.held)
    supervisor.on_shutdown(watch.stop)
    logging.getLogger("watchfiles").setLevel(logging.WARNING)  # it logs every batch at info
    return watch


@dataclass(eq=False)
class _Tree:
    directory: Path
    seats: set[Seat] = field(default_factory=set)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class GitWatch:
    """The watched trees of held seats."""

    def __init__(self, supervisor: Supervisor) -> None:
        self._supervisor = supervisor
        self._trees: dict[Path, _Tree] = {}

    @property
    def watched(self) -> set[Path]:
        """The trees watched now."""
        return set(self._trees)

    def held(self, subject: Subject, held: bool) -> None:
        if not isinstance(subject, SessionSubject):
            return
        state = self._supervisor.seats.get(subject.session)
        if state is None:
            return
        tree = self._trees.get(state.directory)
        if held:
            if tree is None:
                tree = self._trees[state.directory] = _Tree(state.directory)
                tree.task = asyncio.get_running_loop().create_task(self._watch(tree))
            tree.seats.add(subject.session)
        elif tree is not None:
            tree.seats.discard(subject.session)
            if not tree.seats:
                del self._trees[state.directory]
                self._end(tree)

    async def stop(self) -> None:
        trees, self._trees = list(self._trees.values()), {}
        for tree in trees:
            self._end(tree)
        for tree in trees:
            if tree.task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await tree.task

    def _end(self, tree: _Tree) -> None:
        tree.stopping.set()  # the watch thread returns within a step; then the task is cancelled
        if tree.task is not None:
            tree.task.cancel()

    async def _watch(self, tree: _Tree) -> None:
        try:
            folders = await _git_folders(tree.directory)
            changes = awatch(
                tree.directory,
                *(folder for folder in folders if not folder.is_relative_to(tree.directory)),
                watch_filter=_Relevant(folders or [tree.directory / ".git"]),
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                stop_event=tree.stopping,
            )
            batch = asyncio.ensure_future(anext(changes, None))
            await asyncio.sleep(0)  # `anext`'s first step sets the watch up before it waits
            while True:
                await self._rescan(tree)
                if await batch is None:
                    return
                batch = asyncio.ensure_future(anext(changes, None))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("git_watch_failed", directory=str(tree.directory))

    async def _rescan(self, tree: _Tree) -> None:
        found = await scan(tree.directory)
        told = found.told
        for seat in list(tree.seats):
            state = self._supervisor.seats.get(seat)
            if state is None or state.told == {told}:
                continue
            state.told = {told}
            self._supervisor.publish_seat_update(
                seat, "work_changed", {"key": seat, "work": found.work, "git": found.git}, home=True
            )


async def _git_folders(directory: Path) -> list[Path]:
    """The tree's own git folder and the common one (they differ for a linked worktree)."""
    try:
        out = await git(directory, "rev-parse", "--absolute-git-dir", "--git-common-dir")
    except GitFailed:
        return []
    own, common = out.decode("utf-8", "replace").splitlines()[:2]
    return list(dict.fromkeys([Path(own), (directory / common).resolve()]))


class _Relevant:
    """watchfiles' filter: every change in the tree, and in a git folder only what moves a row."""

    def __init__(self, folders: list[Path]) -> None:
        self._folders = [str(folder) + "/" for folder in folders]

    def __call__(self, change: Change, path: str) -> bool:
        for folder in self._folders:
            if path.startswith(folder):
                inside = path[len(folder) :]
                if inside.endswith(".lock"):
                    return False
                return inside in GIT_MARKS or inside.startswith("refs/")
        return True
