"""The host's flow decisions, pure (events in, actions out); the whole picture, with the
supervisor's side, is in `forge.supervisor.terminal.flow`'s docstring.

- `SendWindow`: bytes queued towards the supervisor (the bulk socket was full). Past `SEND_HIGH`
  the PTY stops being read (`PAUSE`), under `SEND_LOW` it is read again (`RESUME`): a stalled
  supervisor blocks the shell instead of growing this process.
- `ParseWindow`: bytes sent that the controller's page has not parsed yet (its acks, passed on
  by the supervisor). Past `UNPARSED_HIGH` the PTY stops being read, under `UNPARSED_LOW` it is
  read again: a key typed during a flood shows behind at most that much, wherever the rest of it
  would have waited (the supervisor, the sockets' buffers, the page).
- `MuteGate`: the supervisor's numbered mute decisions; one no newer than the last applied is
  ignored, so two `flow` requests overtaking each other cannot leave a live viewer muted.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import Enum

SEND_HIGH = 1024 * 1024
SEND_LOW = 256 * 1024
"""Unsent bytes towards the supervisor above which the PTY is not read, and below which it is
read again."""


UNPARSED_HIGH = 512 * 1024
UNPARSED_LOW = 256 * 1024
"""Bytes sent and not parsed by the controller's page past which the PTY is not read, and
below which it is read again (its page acks every 64 KiB it parses)."""


class Reading(Enum):
    """What to do with the PTY's reading for one reason."""

    PAUSE = "pause"
    RESUME = "resume"


@dataclass(slots=True)
class Hysteresis:
    """A level that stops the PTY's reading once past `high` and reads it again once under
    `low`, each told once (both windows below are one of these over what they count)."""

    high: int
    low: int
    paused: bool = False

    def check(self, level: int) -> Reading | None:
        if level > self.high and not self.paused:
            self.paused = True
            return Reading.PAUSE
        if level < self.low and self.paused:
            self.paused = False
            return Reading.RESUME
        return None


@dataclass(slots=True)
class SendWindow:
    """The host's queue towards the supervisor."""

    unsent: int = 0
    gate: Hysteresis = field(default_factory=lambda: Hysteresis(SEND_HIGH, SEND_LOW))

    def queued(self, size: int) -> Reading | None:
        """A frame of `size` bytes waits to be sent."""
        self.unsent += size
        return self.gate.check(self.unsent)

    def sent(self, size: int) -> Reading | None:
        """A queued frame of `size` bytes left."""
        self.unsent -= size
        return self.gate.check(self.unsent)


@dataclass(slots=True)
class ParseWindow:
    """What the controller's page has been sent and not parsed, while it says (`paced`)."""

    paced: bool = False
    epoch: int = 0
    """The number of the on/off decision applied last (a newer one only applies)."""
    parsed: int = 0
    """The seq the page has parsed up to (acks and fresh views only move it forward)."""
    unacked: deque[tuple[int, int]] = field(default_factory=deque)
    """(seq, bytes) of each frame sent after `parsed`, oldest first."""
    unparsed: int = 0
    gate: Hysteresis = field(default_factory=lambda: Hysteresis(UNPARSED_HIGH, UNPARSED_LOW))

    def sent(self, seq: int, size: int) -> Reading | None:
        """A frame went towards the viewers."""
        if not self.paced or seq <= self.parsed:
            return None
        self.unacked.append((seq, size))
        self.unparsed += size
        return self.gate.check(self.unparsed)

    def decide(self, paced: bool | None, parsed: int | None, epoch: int) -> Reading | None:
        """The supervisor's word: whether the controller's page paces the shell (numbered),
        and the seq it has parsed up to."""
        if paced is not None and epoch > self.epoch:
            self.epoch = epoch
            self.paced = paced
        if parsed is not None and parsed > self.parsed:
            self.parsed = parsed
            while self.unacked and self.unacked[0][0] <= parsed:
                self.unparsed -= self.unacked.popleft()[1]
        if not self.paced:
            self.unacked.clear()
            self.unparsed = 0
        return self.gate.check(self.unparsed)


@dataclass(slots=True)
class MuteGate:
    """Whether frames are sent at all: off while no viewer takes them live."""

    muted: bool = False
    epoch: int = 0
    """The number of the decision applied last."""

    def decide(self, muted: bool, epoch: int) -> bool:
        """Apply a decision if it is newer than the last one; returns whether it was applied."""
        if epoch <= self.epoch:
            return False
        self.muted, self.epoch = muted, epoch
        return True
