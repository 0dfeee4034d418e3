"""One clock for every TTL, window, keepalive, backoff and deadline, so tests can drive time.

Code that waits or measures takes a `Clock`; production passes `SYSTEM_CLOCK`, tests pass
`forge.testing.clock.ManualClock` and jump time instead of sleeping. `PinnedClock` is the one
production knob: a process started with a pinned "now" (FORGE_NOW_MS) reads it as its wall clock.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards; only differences mean anything."""

    def time(self) -> float:
        """Wall-clock seconds since the epoch, for timestamps a person reads."""

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` on this clock."""


class SystemClock:
    """The real clocks of the machine."""

    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM_CLOCK: Clock = SystemClock()


class PinnedClock(SystemClock):
    """The machine's clocks with the wall clock held at one instant.

    For a process a test starts with its "now" in the environment (forge health's FORGE_NOW_MS):
    timestamps are the pinned instant, while durations and sleeps stay real, as in the sh shim.
    """

    def __init__(self, wall: float) -> None:
        self._wall = wall

    def time(self) -> float:
        return self._wall


def epoch_ms(clock: Clock = SYSTEM_CLOCK) -> int:
    """Wall-clock milliseconds, the unit every `*_ms` field on the wire uses."""
    return int(clock.time() * 1000)
