"""One clock for every TTL, window, keepalive, backoff and deadline, so tests can drive time.

Code that waits or measures takes a `Clock`; production passes `SYSTEM_CLOCK`, tests pass
`forge.testing.clock.ManualClock` and jump time instead of sleeping.
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


def epoch_ms(clock: Clock = SYSTEM_CLOCK) -> int:
    """Wall-clock milliseconds, the unit every `*_ms` field on the wire uses."""
    return int(clock.time() * 1000)
