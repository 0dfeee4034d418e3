"""The supervisor's side of the tree worker (`forge.workers.trees`): git reads and tree watches
by asking.

`TreeWorker` is a `TreeReads` whose every read runs in the tree worker, so the
supervisor's event loop never forks a git or parses its output; and it hands out tree watches.
The worker manager starts the worker with this service and restarts it when it dies (its row in
`workers` says so); an ask open at its death fails, and so does every watch (its listener hears
`failed`), so the next hold watches again. A read that fails is logged and answered as git not
running there, so a snapshot never fails because of it; `blob` raises `GitError`, which
`file_content` answers.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

from forge.git import GitError
from forge.ipc.errors import RequestFailed, WorkerError
from forge.ipc.manager import WorkerEvent, WorkerHandle, WorkerManager, WorkerRow
from forge.ipc.protocol import WorkerRequest, call
from forge.logs import get_logger
from forge.supervisor.service import WorkerService, worker_words
from forge.supervisor.socket.core import Supervisor
from forge.wire.git import NO_GIT, Diff, Work
from forge.workers.trees.protocol import (
    NOTHING_SEEN,
    TREES,
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

log = get_logger(__name__)

T = TypeVar("T")
Listener = Callable[[WatchHeard], None]

NAME = "trees"
"""The tree worker's row in `workers`."""
READ_S = 120.0
"""How long a read may take before it is abandoned (each git in it is bounded at 30 s, and a
record runs several; the manager's hang check covers a stuck worker)."""


NOTHING_RECORDED = Recorded(NOTHING_SEEN, None)
"""What a record reads where git does not run."""


class TreeReads(Protocol):
    """Every git read the supervisor makes of a seat's tree, wherever the git runs."""

    async def work(self, directory: Path) -> Work: ...

    async def scan(self, directory: Path) -> Seen: ...

    async def record(self, directory: Path) -> tuple[Seen, Diff | None]: ...

    async def commit(self, directory: Path, revision: str) -> str | None: ...

    async def blob(self, directory: Path, commit: str, path: str, limit: int) -> tuple[int, bytes]:
        """The file's size and its first `limit` bytes, or `GitError` in words."""
        ...


class TreeWorker(WorkerService):
    """Git reads and tree watches, run by the tree worker."""

    name = "trees"

    def __init__(self, supervisor: Supervisor, manager: WorkerManager) -> None:
        super().__init__(supervisor, manager)
        self._ids = itertools.count(1)
        self._listeners: dict[int, Listener] = {}
        self._handle: WorkerHandle | None = None

    def install(self) -> None:
        """Start the worker now, so the first read does not wait for a Python start-up."""
        self._handle = self.manager.start(TREES.spec(NAME))
        self._handle.on_event(self._heard)
        super().install()

    async def _ask(self, request: WorkerRequest[T]) -> T:
        assert self._handle is not None, "install() starts the tree worker"
        try:
            return await call(self._handle, request, within=READ_S)
        except (WorkerError, RequestFailed) as error:
            raise _failed(worker_words(error)) from None

    async def _read(self, request: WorkerRequest[T], nothing: T) -> T:
        """A read whose failure is git not running there (logged)."""
        try:
            return await self._ask(request)
        except GitError as failed:
            log.warning("tree_read_failed", why=failed.why)
            return nothing

    async def work(self, directory: Path) -> Work:
        return await self._read(ReadWork(directory=str(directory)), NO_GIT)

    async def scan(self, directory: Path) -> Seen:
        return await self._read(ReadScan(directory=str(directory)), NOTHING_SEEN)

    async def record(self, directory: Path) -> tuple[Seen, Diff | None]:
        recorded = await self._read(ReadRecord(directory=str(directory)), NOTHING_RECORDED)
        return recorded.seen, recorded.diff

    async def commit(self, directory: Path, revision: str) -> str | None:
        return await self._read(ResolveCommit(directory=str(directory), revision=revision), None)

    async def blob(self, directory: Path, commit: str, path: str, limit: int) -> tuple[int, bytes]:
        ask = ReadBlob(directory=str(directory), commit=commit, path=path, limit=limit)
        found = await self._ask(ask)
        return found.size, found.data

    async def watch(self, tree: Path, listener: Listener) -> int:
        """Watch `tree` (and its git folders); its events go to `listener`."""
        ident = next(self._ids)
        self._listeners[ident] = listener
        try:
            await self._ask(Watch(watch=ident, tree=str(tree)))
        except GitError:
            self._listeners.pop(ident, None)
            raise
        return ident

    def unwatch(self, ident: int) -> None:
        if self._listeners.pop(ident, None) is not None and self._handle is not None:
            self.tasks.spawn(self.tell(self._handle, Unwatch(watch=ident), "tree_unwatch_failed"))

    def _heard(self, event: WorkerEvent) -> None:
        heard = TREES.decode_event(event.event, event.data)
        if isinstance(heard, WatchHeard) and (listener := self._listeners.get(heard.watch)):
            listener(heard)

    def owns(self, row: WorkerRow) -> bool:
        return row.name == NAME

    def worker_restarting(self, row: WorkerRow) -> None:
        self._end_watches(row)

    def worker_failed(self, row: WorkerRow) -> None:
        self._end_watches(row)

    def worker_stopped(self, row: WorkerRow) -> None:
        self._end_watches(row)

    def _end_watches(self, row: WorkerRow) -> None:
        """The worker is gone, and its watches with it: each listener hears why."""
        why = f"the tree worker ended: {row.last_reason or 'stopped'}"
        listeners, self._listeners = self._listeners, {}
        for ident, listener in listeners.items():
            listener(WatchHeard(watch=ident, word="failed", why=why))


def _failed(why: str) -> GitError:
    """The error a read asked of the tree worker ends in: `why` is what a client is told."""
    return GitError(("(in the tree worker)",), why)
