"""The supervisor's side of its tree process (`treeside`): git reads and tree watches by asking.

`TreeProcess` is a `gitstate.TreeReads` whose every read runs in the child, so the supervisor's
event loop never forks a git or parses its output; and it hands out tree watches. The child is
started at once and started again by the next ask after it dies (every ask and watch open at its
death fails in words). A read that fails is logged and answered as git not running there, so a
snapshot never fails because of it; `blob` raises `GitError`, which `file_content` answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Optional, TypeVar

import msgspec

from forge import eventloop
from forge.git import GitError
from forge.logs import get_logger
from forge.supervisor.seatfiles.gitstate import NO_SCAN, Seen
from forge.supervisor.seatfiles.treeproto import (
    Ask,
    Event,
    RawReply,
    ReadBlob,
    ReadRecord,
    ReadScan,
    ReadWork,
    ResolveCommit,
    Unwatch,
    Watch,
)
from forge.wire.git import NO_GIT, Diff, Work

log = get_logger(__name__)

T = TypeVar("T")
Listener = Callable[[Event], None]

STOP_S = 5.0
"""How long the child may take to end once its stdin closes, before it is killed."""
LINE_LIMIT = 2 << 30
"""The longest line read from the child: a file read at the highest documents ceiling (1024 MiB)
in base64, with room to spare. A limit, not a buffer: memory grows only with what arrives."""


class _Child:
    """One run of the child: its pipes, the asks waiting on it, the watches listening to it."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.waiting: dict[int, asyncio.Future[RawReply]] = {}
        self.listeners: dict[int, Listener] = {}
        self.reader = asyncio.get_running_loop().create_task(self._read())

    @property
    def alive(self) -> bool:
        return self.process.returncode is None and not self.reader.done()

    def send(self, ask: Ask) -> None:
        """Raises `GitError` when the child has ended: nothing would answer."""
        assert self.process.stdin is not None
        if not eventloop.write_to_pipe(self.process.stdin, msgspec.json.encode(ask) + b"\n"):
            raise _failed("the tree process ended")

    async def _read(self) -> None:
        assert self.process.stdout is not None
        decoder = msgspec.json.Decoder(RawReply | Event)
        while line := await self.process.stdout.readline():
            message = decoder.decode(line)
            if isinstance(message, Event):
                listener = self.listeners.get(message.id)
                if listener is not None:
                    listener(message)
            elif (future := self.waiting.pop(message.id, None)) is not None and not future.done():
                future.set_result(message)
        gone = RawReply(id=0, failed="the tree process ended")
        for future in self.waiting.values():
            if not future.done():
                future.set_result(gone)
        for ident, listener in list(self.listeners.items()):
            listener(Event(id=ident, word="failed", why="the tree process ended"))

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


class TreeProcess:
    """Git reads and tree watches, run by the tree process."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._child: asyncio.Task[_Child] | None = None

    def begin(self) -> None:
        """Start the child now, so the first read does not wait for a Python start-up."""
        self._child = asyncio.get_running_loop().create_task(self._start())

    async def _start(self) -> _Child:
        """In a session of its own, as every worker is: a terminal's Ctrl-C (SIGINT to the
        supervisor's process group) is the supervisor's to act on, and it ends this child by
        closing its stdin (which also happens when the supervisor dies)."""
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "forge.supervisor.seatfiles.treeside",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=LINE_LIMIT,
            start_new_session=True,
        )  # fmt: skip
        return _Child(process)

    async def _running(self) -> _Child:
        task = self._child
        if task is not None and task.done() and _dead(task):
            task = None
        if task is None:
            self.begin()
            task = self._child
        assert task is not None
        return await task

    async def _ask(self, make: Callable[[int], Ask], result: type[T]) -> T:
        try:
            child = await self._running()
        except OSError as error:
            raise _failed(f"the tree process cannot start: {error.strerror or error}") from None
        ask = make(next(self._ids))
        future: asyncio.Future[RawReply] = asyncio.get_running_loop().create_future()
        child.waiting[ask.id] = future
        child.send(ask)
        try:
            reply = await future
        finally:
            child.waiting.pop(ask.id, None)
        if reply.failed is not None:
            raise _failed(reply.failed)
        return msgspec.json.decode(reply.result, type=result)

    async def _read(self, make: Callable[[int], Ask], result: type[T], nothing: T) -> T:
        """A read whose failure is git not running there (logged)."""
        try:
            return await self._ask(make, result)
        except GitError as failed:
            log.warning("tree_read_failed", why=failed.why)
            return nothing

    async def work(self, directory: Path) -> Work:
        return await self._read(lambda n: ReadWork(id=n, directory=str(directory)), Work, NO_GIT)

    async def scan(self, directory: Path) -> Seen:
        return await self._read(
            lambda n: ReadScan(id=n, directory=str(directory)), Seen, NO_SCAN.seen
        )

    async def record(self, directory: Path) -> tuple[Seen, Diff | None]:
        return await self._read(
            lambda n: ReadRecord(id=n, directory=str(directory)),
            tuple[Seen, Diff | None],
            (NO_SCAN.seen, None),
        )

    async def commit(self, directory: Path, revision: str) -> str | None:
        def make(n: int) -> ResolveCommit:
            return ResolveCommit(id=n, directory=str(directory), revision=revision)

        found: str | None = await self._read(make, Optional[str], None)  # type: ignore[arg-type]  # noqa: UP045
        return found

    async def blob(self, directory: Path, commit: str, path: str, limit: int) -> tuple[int, bytes]:
        def make(n: int) -> ReadBlob:
            return ReadBlob(id=n, directory=str(directory), commit=commit, path=path, limit=limit)

        return await self._ask(make, tuple[int, bytes])

    async def watch(self, tree: Path, listener: Listener) -> int:
        """Watch `tree` (and its git folders); its events go to `listener`."""
        child = await self._running()
        ident = next(self._ids)
        child.listeners[ident] = listener
        child.send(Watch(id=ident, tree=str(tree)))
        return ident

    def unwatch(self, ident: int) -> None:
        task = self._child
        if task is None or not task.done() or _dead(task):
            return
        child = task.result()
        if child.listeners.pop(ident, None) is not None and child.alive:
            with contextlib.suppress(GitError):  # ended since: its watches ended with it
                child.send(Unwatch(id=ident))

    async def close(self) -> None:
        if self._child is not None:
            with contextlib.suppress(Exception):  # a child that never started has nothing to end
                await (await self._child).close()


def _failed(why: str) -> GitError:
    """The error a read asked of the tree process ends in: `why` is what a client is told."""
    return GitError(("(in the tree process)",), why)


def _dead(task: asyncio.Task[_Child]) -> bool:
    """A started child task whose child cannot answer (it failed to start, or has ended)."""
    return task.cancelled() or task.exception() is not None or not task.result().alive
