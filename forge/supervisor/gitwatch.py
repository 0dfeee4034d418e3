"""`work_changed{key, work, git}`: a held seat's tree is watched, and its movement pushed.

A tree is watched while a connection holds the session of a seat working in it (several seats of
one project share one watch). The watch is inotify through `watchfiles`' Rust backend (`notify`),
debounced: a burst of writes waits until `STEP_MS` pass quietly or `DEBOUNCE_MS` in all, then one
scan runs (git in subprocesses, `gitwork.scan`). Inside a git folder only what moves the row
counts (HEAD, the index, refs, packed-refs, the *_HEAD marks), so object writes and lock files
wake nothing; a linked worktree's git folders are watched too. `RustNotify` is driven directly
rather than through `awatch`, because setting a recursive watch up walks the whole tree and
`awatch` does that on the event loop (it held a 200-file tree's loop for tens of milliseconds per
hold, see docs/benchmarks.md); here it is set up, waited on and closed in a thread of the watch's
own pool, so the default executor is never held by a waiting watch.

A scan is pushed to a seat, on its counter and to home, unless it is the one thing every holder of
the seat was told (`SeatState.told`: the snapshots taken since the last push, or that push). The
watch is set up before its first scan, so a change between the subscribe's snapshot and the watch
is caught by that scan and a later one by the watch.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from watchfiles import Change
from watchfiles._rust_notify import RustNotify

from forge.logs import get_logger
from forge.supervisor.core import Supervisor
from forge.supervisor.gitwork import GitFailed, git, scan
from forge.wire.seats import Seat, SessionSubject, Subject

log = get_logger(__name__)

STEP_MS = 50
"""A burst of changes is over once this long passes without another."""
DEBOUNCE_MS = 300
"""A burst that never goes quiet is scanned this often at most."""
WATCH_THREADS = 64
"""Each watched tree holds one of these while it waits; they start as trees are watched."""
GIT_MARKS = frozenset(
    {"HEAD", "index", "packed-refs", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD"}
)


def install(supervisor: Supervisor) -> GitWatch:
    watch = GitWatch(supervisor)
    supervisor.on_held(watch.held)
    supervisor.on_shutdown(watch.stop)
    return watch


@dataclass(eq=False)
class _Tree:
    directory: Path
    seats: set[Seat] = field(default_factory=set)
    stopping: threading.Event = field(default_factory=threading.Event)
    task: asyncio.Task[None] | None = None


class GitWatch:
    """The watched trees of held seats."""

    def __init__(self, supervisor: Supervisor) -> None:
        self._supervisor = supervisor
        self._trees: dict[Path, _Tree] = {}
        self._threads = ThreadPoolExecutor(WATCH_THREADS, thread_name_prefix="forge-git-watch")

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
                tree.stopping.set()  # the wait returns within a step; a scan running finishes

    async def stop(self) -> None:
        trees, self._trees = list(self._trees.values()), {}
        for tree in trees:
            tree.stopping.set()
        for tree in trees:
            if tree.task is not None:
                await tree.task
        self._threads.shutdown(wait=False)

    async def _watch(self, tree: _Tree) -> None:
        """Set the watch up, scan once, then scan after each relevant burst until stopped."""
        loop = asyncio.get_running_loop()
        folders = await _git_folders(tree.directory)
        paths = [tree.directory, *(f for f in folders if not f.is_relative_to(tree.directory))]
        relevant = _Relevant(folders or [tree.directory / ".git"])
        try:
            notify = await loop.run_in_executor(self._threads, _notify, paths)
        except Exception:
            log.exception("git_watch_failed", directory=str(tree.directory))
            return
        try:
            await self._rescan(tree)  # after the watch is up: a change before it is seen here
            while not tree.stopping.is_set():
                raw = await loop.run_in_executor(
                    self._threads, notify.watch, DEBOUNCE_MS, STEP_MS, 0, tree.stopping
                )
                if isinstance(raw, set) and any(relevant(Change(c), p) for c, p in raw):
                    await self._rescan(tree)
        except Exception:
            log.exception("git_watch_failed", directory=str(tree.directory))
        finally:
            await loop.run_in_executor(self._threads, notify.close)

    async def _rescan(self, tree: _Tree) -> None:
        try:
            found = await scan(tree.directory)
        except Exception:  # one failed scan must not end the watch; the next change scans again
            log.exception("git_scan_failed", directory=str(tree.directory))
            return
        told = found.told
        for seat in list(tree.seats):
            state = self._supervisor.seats.get(seat)
            if state is None or state.told == {told}:
                continue
            state.told = {told}
            self._supervisor.publish_seat_update(
                seat, "work_changed", {"key": seat, "work": found.work, "git": found.git}, home=True
            )


def _notify(paths: list[Path]) -> RustNotify:
    """A recursive inotify watch of `paths` (in a thread: it walks every folder under them)."""
    return RustNotify([str(path) for path in paths], False, False, 0, True, True)


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
