"""The client's liveness probe (T21): `ping` after 15 s of quiet, the link dead 10 s later.

The server's own WebSocket ping proves we read; it cannot prove we will ever hear a close, so a
half-open socket (a laptop that slept, a network that went away) would sit open for ever drawing
stale data. As on any byte-counting transport, quiet is measured in bytes under the socket at
beats: a beat that sees the byte count moved restarts the quiet from itself, a probe goes out
after `quiet_s` without a byte, and `deadline_s` after a probe that drew no byte the link is
dead and the caller closes it (its reconnect then runs). A probe already out is never re-armed.
Pure: the caller passes the time and the byte count; see `ForgeConnection` for the beat loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Beat(Enum):
    QUIET = "quiet"
    """Nothing to do."""
    PING = "ping"
    """Send `{"kind": "ping"}` now."""
    DEAD = "dead"
    """The probe drew no byte within the deadline: close the socket."""


@dataclass(frozen=True, slots=True)
class ProbeTiming:
    quiet_s: float = 15.0
    """Seconds without a byte before a probe goes out."""
    deadline_s: float = 10.0
    """Seconds a probe may go unanswered before the link is declared dead."""
    beat_s: float = 1.0
    """How often the byte count is looked at; adds at most one beat to each bound."""


DEFAULT_TIMING = ProbeTiming()
"""The protocol's numbers (T21): a probe after 15 s of quiet, the link dead 10 s later."""


class Probe:
    """One connection's probe state; `beat` at every `timing.beat_s`, `wake` on a return."""

    def __init__(self, now: float, received: int = 0, timing: ProbeTiming = DEFAULT_TIMING) -> None:
        self.timing = timing
        self._received = received
        self._quiet_since = now
        self._probe_sent: float | None = None

    @property
    def outstanding(self) -> bool:
        """A probe is out and no byte has arrived since."""
        return self._probe_sent is not None

    def beat(self, now: float, received: int) -> Beat:
        """Look at the byte count `received` so far; say whether to ping or give up."""
        if received != self._received:
            self._received = received
            self._quiet_since = now
            self._probe_sent = None
            return Beat.QUIET
        if self._probe_sent is not None:
            return Beat.DEAD if now - self._probe_sent >= self.timing.deadline_s else Beat.QUIET
        if now - self._quiet_since >= self.timing.quiet_s:
            self._probe_sent = now
            return Beat.PING
        return Beat.QUIET

    def wake(self, now: float) -> Beat:
        """A return from the background (a resumed process): probe at once, unless one is out,
        whose deadline then stands (re-arming it would keep a dead link open for ever)."""
        if self._probe_sent is not None:
            return Beat.QUIET
        self._probe_sent = now
        return Beat.PING
