"""`work_changed{key, work, git}`: a held seat's tree is watched, and its movement pushed.

A tree is watched while a connection holds the session of a seat working in it (several seats of
one project share one watch), and for `LINGER_S` after its last holder leaves. The watch and the
scans run in the tree worker (`forge.workers.trees`, through `trees.TreeWorker`): here a watch
is only its `ready`/`changed` events, and bursts that arrive while a scan runs fold into one
next scan.

A scan is pushed to a seat, on its counter and to home, unless it is the one thing every holder of
the seat was told (`SeatState.told`: the snapshots taken since the last push, or that push). The
first scan runs once the watch reports `ready`, so a change between the subscribe's snapshot and
the watch is caught by that scan and a later one by the watch. If the tree worker dies, every
watch ends (logged) and the next hold, once the manager has restarted it, watches again.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from forge.git import GitError
from forge.logs import get_logger
from forge.supervisor.seatfiles.trees import TreeWorker
from forge.supervisor.service import TaskSet
from forge.supervisor.socket.core import Supervisor
from forge.wire.seats import Seat, SessionSubject, Subject
from forge.workers.trees.protocol import WatchHeard

log = get_logger(__name__)


LINGER_S = 30.0
"""A tree's watch outlives its last holder this long, so a page that closes and reopens a seat
does not pay for setting the watch up again (half a second of the tree worker for 20,000 files)."""


def install(supervisor: Supervisor, trees: TreeWorker, *, linger_s: float = LINGER_S) -> GitWatch:
    """Watch held seats' trees with the tree worker."""
    watch = GitWatch(supervisor, trees, linger_s)
    supervisor.on_held(watch.held)
    supervisor.on_shutdown(watch.stop)
    return watch


@dataclass(eq=False)
class _Tree:
    directory: Path
    seats: set[Seat] = field(default_factory=set)
    dirty: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by the watch's `ready` and `changed` (and to wake the loop when it should end)."""
    stopping: bool = False
    """Ended by the supervisor: nobody holds a seat of the tree, or it shuts down."""
    failed: str | None = None
    """Why the watch could not be kept (it could not be set up, or its process ended)."""
    lingering: asyncio.Task[None] | None = None
    """While nobody holds a seat of the tree: the countdown to ending its watch."""

    def heard(self, event: WatchHeard) -> None:
        if event.word == "failed":
            self.failed = event.why or "the watch failed"
        self.dirty.set()


class GitWatch:
    """The watched trees of held seats."""

    def __init__(self, supervisor: Supervisor, trees: TreeWorker, linger_s: float) -> None:
        self._supervisor = supervisor
        self._process = trees
        self._linger_s = linger_s
        self._trees: dict[Path, _Tree] = {}
        self._tasks = TaskSet("git_watch")
        """Every tree loop still running, ending ones included (shutdown waits for them)."""

    @property
    def watched(self) -> set[Path]:
        """The trees watched now, lingering ones included."""
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
                self._tasks.spawn(self._watch(tree))
            elif tree.lingering is not None:
                tree.lingering.cancel()
                tree.lingering = None
                tree.dirty.set()  # unscanned while nobody held it: scan for the new holder
            tree.seats.add(subject.session)
        elif tree is not None:
            tree.seats.discard(subject.session)
            if not tree.seats:
                tree.lingering = self._tasks.spawn(self._linger(tree))

    async def _linger(self, tree: _Tree) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await self._supervisor.clock.sleep(self._linger_s)
            if not tree.seats and self._trees.get(tree.directory) is tree:
                del self._trees[tree.directory]
                _end(tree)

    async def stop(self) -> None:
        trees, self._trees = list(self._trees.values()), {}
        for tree in trees:
            if tree.lingering is not None:
                tree.lingering.cancel()
            _end(tree)
        await self._tasks.drain()

    async def _watch(self, tree: _Tree) -> None:
        """Watch the tree, scan once the watch is up, then after each burst, until ended."""
        try:
            ident = await self._process.watch(tree.directory, tree.heard)
        except GitError as failed:  # the tree worker died or restarts: the next hold tries again
            tree.failed = failed.why
            self._forget(tree)
            return
        try:
            while True:
                await tree.dirty.wait()
                if tree.stopping or tree.failed is not None:
                    break
                tree.dirty.clear()
                if tree.seats:  # a lingering tree is scanned when it is held again
                    await self._rescan(tree)
        finally:
            self._process.unwatch(ident)
        self._forget(tree)

    def _forget(self, tree: _Tree) -> None:
        """A watch that failed is logged and forgotten, so the next hold tries again."""
        if tree.failed is not None and not tree.stopping:
            log.error("git_watch_failed", directory=str(tree.directory), why=tree.failed)
            if self._trees.get(tree.directory) is tree:
                del self._trees[tree.directory]

    async def _rescan(self, tree: _Tree) -> None:
        found = await self._process.scan(tree.directory)
        told = found.told
        for seat in list(tree.seats):
            state = self._supervisor.seats.get(seat)
            if state is None or state.told == {told}:
                continue
            state.told = {told}
            self._supervisor.publish_seat_update(
                seat, "work_changed", {"key": seat, "work": found.work, "git": found.git}, home=True
            )


def _end(tree: _Tree) -> None:
    tree.stopping = True
    tree.dirty.set()
