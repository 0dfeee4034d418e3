"""One decode at a time, a take's reads first: the model is one and the cores are few.

A take's read (`windows.py`) queues on the lane and always runs; a partial runs only when the lane
is idle (no decode running or waiting) and the machine has a core to spare (its one-minute load
average below its core count), so partials take the spare time and never delay words that will
land: a decode cannot be stopped once it runs, and on a machine loaded past its cores a partial
still decoding when the person stops held the end of the take for seconds. Decodes run in a
thread, keeping the worker's loop free for heartbeats and audio.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from forge.workers.dictate.engine import Engine
from forge.workers.dictate.windows import Heard

T = TypeVar("T")


def spare_core() -> bool:
    """The machine's one-minute load average is below its core count."""
    return os.getloadavg()[0] < (os.cpu_count() or 1)


class Lane:
    def __init__(self, spare: Callable[[], bool] = spare_core) -> None:
        self._lock = asyncio.Lock()
        self._waiting = 0
        self._spare = spare

    @property
    def idle(self) -> bool:
        """Nothing decodes or waits to, and a core is spare: a partial may run."""
        return not self._lock.locked() and self._waiting == 0 and self._spare()

    async def final(
        self, engine: Engine, pcm: bytes, prompt: Sequence[int] = (), *, window: bool = False
    ) -> tuple[Heard, float]:
        """The words in a take's read (`Engine.hear`), and the decode's own seconds (queueing
        excluded)."""
        return await self.run(functools.partial(engine.hear, pcm, prompt=prompt, window=window))

    async def run(self, decode: Callable[[], T]) -> tuple[T, float]:
        """Any decode in turn with a take's reads (the bench's floors), and its own seconds."""
        self._waiting += 1
        try:
            await self._lock.acquire()
        finally:
            self._waiting -= 1
        try:
            started = time.perf_counter()
            result = await asyncio.to_thread(decode)
            return result, time.perf_counter() - started
        finally:
            self._lock.release()

    async def partial(self, engine: Engine, pcm: bytes, prompt: Sequence[int] = ()) -> Heard | None:
        """The words so far in a take's open window, or None when the lane was busy."""
        if not self.idle:
            return None
        async with self._lock:
            return await asyncio.to_thread(engine.hear, pcm, partial=True, prompt=prompt)
