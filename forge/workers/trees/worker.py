"""The tree worker: the supervisor's git reads of seats' trees, and their watches.

They run here rather than in the supervisor because both stall the process that runs them:
starting a git is a fork whose parent waits for the child to exec while holding the GIL (on a
loaded machine, tens of milliseconds per git and several gits per read), parsing a patch is
Python work, and setting a recursive watch up walks the whole tree. Reads run concurrently on
the worker's loop; each watch runs in a thread of its own, its events sent in order by one task.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

from forge.git import GitError
from forge.ipc.errors import RequestFailed
from forge.ipc.worker import Worker, handles
from forge.wire.git import Work
from forge.workers.trees.gitstate import LocalTrees
from forge.workers.trees.protocol import (
    GIT_FAILED,
    TREES,
    Blob,
    ReadBlob,
    ReadRecord,
    ReadScan,
    ReadWork,
    Recorded,
    ResolveCommit,
    Seen,
    Unwatch,
    Watch,
    WatchHeard,
)
from forge.workers.trees.watch import git_folders, watch

T = TypeVar("T")


class TreeHost(Worker):
    kind = TREES.kind

    async def setup(self) -> None:
        self._trees = LocalTrees()
        self._stops: dict[int, threading.Event] = {}
        self._heard: asyncio.Queue[WatchHeard] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self.spawn(self._send_heard())

    async def teardown(self) -> None:
        for stop in self._stops.values():
            stop.set()

    @handles(ReadWork)
    async def work(self, request: ReadWork) -> Work:
        return await _answered(self._trees.work(Path(request.directory)))

    @handles(ReadScan)
    async def scan(self, request: ReadScan) -> Seen:
        return await _answered(self._trees.scan(Path(request.directory)))

    @handles(ReadRecord)
    async def record(self, request: ReadRecord) -> Recorded:
        seen, diff = await _answered(self._trees.record(Path(request.directory)))
        return Recorded(seen, diff)

    @handles(ResolveCommit)
    async def commit(self, request: ResolveCommit) -> str | None:
        return await _answered(self._trees.commit(Path(request.directory), request.revision))

    @handles(ReadBlob)
    async def blob(self, request: ReadBlob) -> Blob:
        directory = Path(request.directory)
        read = self._trees.blob(directory, request.commit, request.path, request.limit)
        size, data = await _answered(read)
        return Blob(size, data)

    @handles(Watch)
    async def watch(self, request: Watch) -> None:
        self._stops[request.watch] = threading.Event()
        self.spawn(self._start_watch(request))

    @handles(Unwatch)
    async def unwatch(self, request: Unwatch) -> None:
        stop = self._stops.pop(request.watch, None)
        if stop is not None:
            stop.set()

    async def _start_watch(self, request: Watch) -> None:
        """Find the tree's git folders here (a git, on the loop), then watch in a thread."""
        tree = Path(request.tree)
        folders = await git_folders(tree)
        stop = self._stops.get(request.watch)
        if stop is None:  # unwatched meanwhile
            return
        args = (request.watch, tree, folders, stop, self._tell)
        threading.Thread(target=watch, args=args, daemon=True).start()

    def _tell(self, heard: WatchHeard) -> None:
        """From a watch thread: queued for the loop, so events leave in the order heard."""
        self._loop.call_soon_threadsafe(self._heard.put_nowait, heard)

    async def _send_heard(self) -> None:
        while True:
            await self.emit(await self._heard.get())


async def _answered(read: Awaitable[T]) -> T:
    """`read`'s result; git's failure is the request's refusal, in git's words."""
    try:
        return await read
    except GitError as failed:
        raise RequestFailed(GIT_FAILED, failed.why) from None
