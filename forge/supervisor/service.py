"""The base every feature's service stands on: its background tasks, its asks, its worker rows.

A feature served by workers (terminal hosts, browser hosts, the dictate worker, the walker) does
three chores the same way, so they live here once:

- `TaskSet`: the work it starts in the background (a resize, a resync, a retry), each task kept
  until it ends, a failure recorded as `<service>_task_failed`, all cancelled together when the
  supervisor stops (or when the piece that owns them closes: a terminal's own set).
- `ask`: one request to a worker whose failure is the client's refusal of the verb that asked
  (`ClientRefusal(what, why, seat)`, in the worker's own words: `worker_words`);
  `ask_or_log` and `tell` for a request no client waits on (a failure is a record: the answer is
  None, or `tell` says False).
- row hooks: `worker_ready`, `worker_restarting`, `worker_failed` and `worker_stopped` run when a
  row of a worker the service `owns` enters that state.

A feature's service subclasses `WorkerService` and calls `install()` after registering its verbs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from forge.ipc.envelope import Payload
from forge.ipc.errors import RequestFailed, WorkerError
from forge.ipc.manager import WorkerHandle, WorkerManager, WorkerRow, WorkerState
from forge.ipc.messages import Reply
from forge.ipc.protocol import WorkerRequest, call, call_raw
from forge.logs import get_logger
from forge.supervisor.socket.core import Supervisor
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat

log = get_logger(__name__)

T = TypeVar("T")
ReplyT = TypeVar("ReplyT")


def worker_words(error: WorkerError | RequestFailed) -> str:
    """What a client is told of a failed request: a handler's refusal in its own words (without
    its code), a worker that could not answer as the manager says it."""
    return error.message if isinstance(error, RequestFailed) else str(error)


class TaskSet:
    """Background tasks owned together: kept until each ends, a failure recorded, all stopped
    together."""

    def __init__(self, owner: str) -> None:
        self._owner = owner
        self._tasks: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run `work` on the loop; a failure other than cancellation is recorded, not lost."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def cancel(self) -> None:
        """Cancel every task still running (they end at their next await)."""
        for task in list(self._tasks):
            task.cancel()

    async def stop(self) -> None:
        """Cancel every task and wait until each has ended."""
        self.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def drain(self) -> None:
        """Wait until every task running now has ended, without cancelling any."""
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error(f"{self._owner}_task_failed", error=repr(task.exception()))


class WorkerService:
    """One feature's service over its workers: its task set, its asks, its rows' hooks."""

    name = "service"
    """Names its records (`<name>_task_failed`)."""

    def __init__(self, supervisor: Supervisor, manager: WorkerManager) -> None:
        self.supervisor = supervisor
        self.manager = manager
        self.tasks = TaskSet(self.name)

    def install(self) -> None:
        """Stop the tasks when the supervisor stops; hear the rows of the workers it owns."""
        self.supervisor.on_shutdown(self.tasks.stop)
        self.manager.on_change(self._row_changed)

    async def ask(
        self,
        handle: WorkerHandle,
        request: WorkerRequest[ReplyT],
        *,
        what: str,
        seat: Seat | None = None,
        doing: str | None = None,
        within: float | None = None,
    ) -> ReplyT:
        """`request`'s answer; a failure is the client's refusal of `what` (on `seat`), said as
        `doing: <the worker's words>` when `doing` is given."""
        try:
            return await call(handle, request, within=within)
        except (WorkerError, RequestFailed) as error:
            raise _refusal(error, what, seat, doing) from None

    async def ask_raw(
        self,
        handle: WorkerHandle,
        request: WorkerRequest[ReplyT],
        *,
        what: str,
        seat: Seat | None = None,
        doing: str | None = None,
        within: float | None = None,
        payloads: tuple[Payload, ...] = (),
    ) -> tuple[ReplyT, Reply]:
        """`ask` for a request or answer that carries raw payload frames: (typed answer, raw
        reply)."""
        try:
            return await call_raw(handle, request, payloads=payloads, within=within)
        except (WorkerError, RequestFailed) as error:
            raise _refusal(error, what, seat, doing) from None

    async def ask_or_log(
        self,
        handle: WorkerHandle,
        request: WorkerRequest[ReplyT],
        event: str,
        *,
        within: float | None = None,
        expected: bool = False,
        **fields: Any,
    ) -> ReplyT | None:
        """`request`'s answer, or None after a record `event` (with `reason`) when it failed: for
        a request no client waits on. The record is a warning, or a debug record when the
        failure is `expected` (a cancel sent to a worker that may be gone)."""
        settled = self._settle(handle, request, event, within, expected, fields)
        _, answer = await settled
        return answer

    async def tell(
        self,
        handle: WorkerHandle,
        request: WorkerRequest[Any],
        event: str,
        *,
        within: float | None = None,
        expected: bool = False,
        **fields: Any,
    ) -> bool:
        """`ask_or_log` for a request whose answer is not needed: whether the worker answered."""
        answered, _ = await self._settle(handle, request, event, within, expected, fields)
        return answered

    async def _settle(
        self,
        handle: WorkerHandle,
        request: WorkerRequest[ReplyT],
        event: str,
        within: float | None,
        expected: bool,
        fields: dict[str, Any],
    ) -> tuple[bool, ReplyT | None]:
        try:
            return True, await call(handle, request, within=within)
        except (WorkerError, RequestFailed) as error:
            record = log.debug if expected else log.warning
            record(event, reason=str(error), **fields)
            return False, None

    # Row hooks: a subclass overrides those it needs.

    def owns(self, row: WorkerRow) -> bool:
        """Whether `row` is one of this service's workers."""
        return False

    def worker_ready(self, row: WorkerRow) -> None:
        """One of its workers is ready (first start or after a restart)."""

    def worker_restarting(self, row: WorkerRow) -> None:
        """One of its workers exited and is being restarted."""

    def worker_failed(self, row: WorkerRow) -> None:
        """One of its workers failed for good (it crashed too often, or its config is wrong)."""

    def worker_stopped(self, row: WorkerRow) -> None:
        """One of its workers was stopped (asked to, or an exit its owner handles)."""

    def _row_changed(self, row: WorkerRow) -> None:
        if not self.owns(row):
            return
        hook = {
            WorkerState.READY: self.worker_ready,
            WorkerState.RESTARTING: self.worker_restarting,
            WorkerState.FAILED: self.worker_failed,
            WorkerState.STOPPED: self.worker_stopped,
        }.get(row.state)
        if hook is not None:
            hook(row)


def _refusal(
    error: WorkerError | RequestFailed, what: str, seat: Seat | None, doing: str | None
) -> ClientRefusal:
    words = worker_words(error)
    return ClientRefusal(what, words if doing is None else f"{doing}: {words}", seat)
