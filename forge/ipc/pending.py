"""Requests waiting for a worker's answer, each with its own deadline on the injected clock.

Every request ends exactly once: with its reply, its worker's refusal, `timeout` at its own
deadline, or the error of whatever ended the worker (`fail_all`), synchronously when it is called.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

from forge.clock import Clock
from forge.ipc.errors import RequestTimeout
from forge.ipc.messages import Reply


class PendingRequests:
    """The in-flight requests of one worker, across its generations."""

    def __init__(self, worker: str, clock: Clock) -> None:
        self._worker = worker
        self._clock = clock
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[asyncio.Future[Reply], asyncio.Task[None]]] = {}

    def __len__(self) -> int:
        return len(self._waiting)

    def open(self, seconds: float) -> tuple[int, asyncio.Future[Reply]]:
        """A new request id and the future its answer will resolve; it times out by itself."""
        request_id = next(self._ids)
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        timer = asyncio.ensure_future(self._expire(request_id, seconds))
        self._waiting[request_id] = (future, timer)
        return request_id, future

    async def _expire(self, request_id: int, seconds: float) -> None:
        await self._clock.sleep(seconds)
        self.fail(request_id, RequestTimeout(self._worker, f"no answer within {seconds:g} s"))

    def resolve(self, request_id: int | None, reply: Reply) -> bool:
        """Answer a request; False if it already ended (late reply after a timeout)."""
        entry = self._pop(request_id)
        if entry is None:
            return False
        entry.set_result(reply)
        return True

    def fail(self, request_id: int | None, error: BaseException) -> bool:
        entry = self._pop(request_id)
        if entry is None:
            return False
        entry.set_exception(error)
        return True

    def fail_all(self, make_error: Callable[[], BaseException]) -> int:
        """End every pending request with a fresh error; returns how many there were."""
        request_ids = list(self._waiting)
        for request_id in request_ids:
            self.fail(request_id, make_error())
        return len(request_ids)

    def forget(self, request_id: int) -> None:
        """The caller stopped waiting (cancelled): drop the entry and its timer."""
        self._pop(request_id)

    def _pop(self, request_id: int | None) -> asyncio.Future[Reply] | None:
        if request_id is None:
            return None
        entry = self._waiting.pop(request_id, None)
        if entry is None:
            return None
        future, timer = entry
        timer.cancel()
        return None if future.done() else future
