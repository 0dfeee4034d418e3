"""When a connection must be ended for making no progress (T14, T15, O-T3), as a pure rule.

The monitor feeds `Liveness.check` the time and what the connection is doing; the verdict is
`WRITE_TIMEOUT` when one write has been in flight for the write bound (a peer that stopped
reading holds it open, and websockets' keepalive cannot see it), `WATCHDOG` when the connection
has been busy (a handler running or frames waiting) with no completed write for the watchdog
bound, else None. An idle connection counts as progress, so it is never reaped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Verdict = Literal["write_timeout", "watchdog"]
WRITE_TIMEOUT: Verdict = "write_timeout"
WATCHDOG: Verdict = "watchdog"


@dataclass(slots=True)
class Liveness:
    """The two bounds and the last moment of progress (a completed write, or being idle)."""

    write_timeout_s: float
    watchdog_s: float
    progress_at: float

    @property
    def tick_s(self) -> float:
        """How often to check: a quarter of the shorter bound, so a trip is at most that late."""
        return min(self.write_timeout_s, self.watchdog_s) / 4

    def wrote(self, now: float) -> None:
        """A write completed: progress."""
        self.progress_at = now

    def check(self, now: float, *, write_started: float | None, busy: bool) -> Verdict | None:
        if write_started is not None and now - write_started >= self.write_timeout_s:
            return WRITE_TIMEOUT
        if not busy and write_started is None:
            self.progress_at = now
            return None
        if now - self.progress_at >= self.watchdog_s:
            return WATCHDOG
        return None
