"""A clock that moves only when a test says so (after trio.testing.MockClock)."""

from __future__ import annotations

import asyncio
import heapq
import itertools


class ManualClock:
    """`sleep` parks until `advance` moves time past the deadline; nothing else moves time."""

    def __init__(self, start: float = 1_000.0, wall_start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._wall_offset = wall_start - start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def monotonic(self) -> float:
        return self._now

    def time(self) -> float:
        return self._now + self._wall_offset

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._order), waiter))
        await waiter

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline has passed."""
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, waiter = heapq.heappop(self._sleepers)
            if not waiter.done():
                waiter.set_result(None)

    @property
    def sleepers(self) -> int:
        """How many sleeps are waiting, so a test can await 'the code is now parked'."""
        return sum(1 for _, _, w in self._sleepers if not w.done())
