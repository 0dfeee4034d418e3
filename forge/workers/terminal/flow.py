"""The host's two flow decisions, pure (events in, actions out); the whole picture, with the
supervisor's side, is in `forge.supervisor.terminal_flow`'s docstring.

- `SendWindow`: bytes queued towards the supervisor (the bulk socket was full). Past `SEND_HIGH`
  the PTY stops being read (`PAUSE`), under `SEND_LOW` it is read again (`RESUME`): a stalled
  supervisor blocks the shell instead of growing this process.
- `MuteGate`: the supervisor's numbered mute decisions; one no newer than the last applied is
  ignored, so two `flow` requests overtaking each other cannot leave a live viewer muted.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

SEND_HIGH = 1024 * 1024
SEND_LOW = 256 * 1024
"""Unsent bytes towards the supervisor above which the PTY is not read, and below which it is
read again."""


class Reading(Enum):
    """What to do with the PTY's reading for the `ipc` reason."""

    PAUSE = "pause"
    RESUME = "resume"


@dataclass(slots=True)
class SendWindow:
    """The host's queue towards the supervisor, with hysteresis between `high` and `low`."""

    high: int = SEND_HIGH
    low: int = SEND_LOW
    unsent: int = 0
    paused: bool = False

    def queued(self, size: int) -> Reading | None:
        """A frame of `size` bytes waits to be sent."""
        self.unsent += size
        if self.unsent > self.high and not self.paused:
            self.paused = True
            return Reading.PAUSE
        return None

    def sent(self, size: int) -> Reading | None:
        """A queued frame of `size` bytes left."""
        self.unsent -= size
        if self.unsent < self.low and self.paused:
            self.paused = False
            return Reading.RESUME
        return None


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
