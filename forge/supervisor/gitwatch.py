"""`work_changed{key, work, git}`: a held seat's tree is watched, and its movement pushed.

A tree is watched while a connection holds the session of a seat working in it (several seats of
one project share one watch). The watches live in one child process, `treewatch` (watchfiles'
Rust `notify`, recursive inotify, debounced; git-folder noise filtered out there), started with
the service, because setting a recursive watch up holds the GIL for the whole walk of the tree;
here a watch is only its `ready`/`changed` lines. Lines that arrive while a scan runs fold into
one next scan. A scan is `gitwork.scan`: git in subprocesses.

A scan is pushed to a seat, on its counter and to home, unless it is the one thing every holder of
the seat was told (`SeatState.told`: the snapshots taken since the last push, or that push). The
first scan runs once the watch reports `ready`, so a change between the subscribe's snapshot and
the watch is caught by that scan and a later one by the watch. If the watch process dies, every
watch ends (logged) and the next hold starts it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from forge.logs import get_logger
from forge.supervisor.core import Supervisor
from forge.supervisor.gitwork import GitFailed, git, scan
from forge.wire.seats import Seat, SessionSubject, Subject

log = get_logger(__name__)

STOP_S = 5.0
"""How long the watch process may take to end once its stdin closes, before it is killed."""

Listener = Callable[[str, str], None]
"""Called with a watch's word (`ready`, `changed`, `failed`) and the rest of its line."""


def install(supervisor: Supervisor) -> GitWatch:
    watch = GitWatch(supervisor)
    supervisor.on_held(watch.held)
    supervisor.on_shutdown(watch.stop)
    watch.begin()
    return watch


class _Watches:
    """The `treewatch` child: lines in, lines out, each line routed to its watch's listener."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self._listeners: dict[str, Listener] = {}
        self._ids = itertools.count(1)
        self.reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def start(cls) -> _Watches:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "forge.supervisor.treewatch",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        return cls(process)

    @property
    def alive(self) -> bool:
        return self.process.returncode is None and not self.reader.done()

    def watch(self, paths: list[Path], listener: Listener) -> str:
        ident = str(next(self._ids))
        self._listeners[ident] = listener
        self._send(f"watch {ident} {json.dumps([str(path) for path in paths])}")
        return ident

    def unwatch(self, ident: str) -> None:
        if self._listeners.pop(ident, None) is not None:
            self._send(f"unwatch {ident}")

    def _send(self, line: str) -> None:
        assert self.process.stdin is not None
        if self.alive:
            self.process.stdin.write(line.encode("utf-8") + b"\n")

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            ident, word, *rest = line.decode("utf-8", "replace").rstrip("\n").split(" ", 2)
            listener = self._listeners.get(ident)
            if listener is not None:
                listener(word, rest[0] if rest else "")
        for listener in list(self._listeners.values()):
            listener("failed", json.dumps("the watch process ended"))

    async def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            async with asyncio.timeout(STOP_S):
                await self.process.wait()
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        await self.reader


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

    def heard(self, word: str, rest: str) -> None:
        if word == "failed":
            self.failed = json.loads(rest) if rest else "the watch failed"
        self.dirty.set()


class GitWatch:
    """The watched trees of held seats."""

    def __init__(self, supervisor: Supervisor) -> None:
        self._supervisor = supervisor
        self._trees: dict[Path, _Tree] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        """Every tree loop still running, ending ones included (shutdown waits for them)."""
        self._watches: asyncio.Task[_Watches] | None = None

    @property
    def watched(self) -> set[Path]:
        """The trees watched now."""
        return set(self._trees)

    def begin(self) -> None:
        """Start the watch process now, so the first hold does not wait for a Python start-up."""
        self._watches = asyncio.get_running_loop().create_task(_Watches.start())

    async def _process(self) -> _Watches:
        if self._watches is not None and self._watches.done():
            failed = self._watches.exception() is not None
            if failed or not self._watches.result().alive:
                self._watches = None
        if self._watches is None:
            self.begin()
        assert self._watches is not None
        return await self._watches

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
                task = asyncio.get_running_loop().create_task(self._watch(tree))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            tree.seats.add(subject.session)
        elif tree is not None:
            tree.seats.discard(subject.session)
            if not tree.seats:
                del self._trees[state.directory]
                _end(tree)

    async def stop(self) -> None:
        trees, self._trees = list(self._trees.values()), {}
        for tree in trees:
            _end(tree)
        await asyncio.gather(*self._tasks)
        if self._watches is not None:
            with contextlib.suppress(Exception):  # a process that never started has nothing to end
                await (await self._watches).close()

    async def _watch(self, tree: _Tree) -> None:
        """Watch the tree, scan once the watch is up, then after each burst, until ended."""
        try:
            folders = await _git_folders(tree.directory)
            watches = await self._process()
        except Exception:
            log.exception("git_watch_failed", directory=str(tree.directory))
            return
        ident = watches.watch([tree.directory, *folders], tree.heard)
        try:
            while True:
                await tree.dirty.wait()
                if tree.stopping or tree.failed is not None:
                    break
                tree.dirty.clear()
                await self._rescan(tree)
        finally:
            watches.unwatch(ident)
        if tree.failed is not None and not tree.stopping:
            log.error("git_watch_failed", directory=str(tree.directory), why=tree.failed)
            if self._trees.get(tree.directory) is tree:
                del self._trees[tree.directory]  # the next hold tries again

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


def _end(tree: _Tree) -> None:
    tree.stopping = True
    tree.dirty.set()


async def _git_folders(directory: Path) -> list[Path]:
    """The tree's own git folder and the common one (they differ for a linked worktree)."""
    try:
        out = await git(directory, "rev-parse", "--absolute-git-dir", "--git-common-dir")
    except GitFailed:
        return []
    own, common = out.decode("utf-8", "replace").splitlines()[:2]
    return list(dict.fromkeys([Path(own), (directory / common).resolve()]))
