"""The seat registry: a seat starts when anything is started in it, under a configured project (D2).

A seat's state is the supervisor's, not a worker's: its epoch and numbered window (what clients
were told survives a worker restart), its agents row, and the pieces of its session subject the
hosts fill in (`terminal`, `processes`, `background_tasks`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge.clock import Clock, epoch_ms
from forge.config import ForgeConfig
from forge.errors import UserError
from forge.wire.seats import Seat
from forge.wire.window import SeatWindow
from forge.workers.walker.protocol import ProcessRow


class UnknownProject(UserError):
    """A seat was named under a project forge.toml does not configure."""

    def __init__(self, seat: Seat) -> None:
        super().__init__(f"no project {seat.org}/{seat.project} is configured for seat {seat}")
        self.seat = seat


@dataclass(eq=False)
class SeatState:
    """One started seat. Hosts mutate the session pieces, then publish the matching update."""

    seat: Seat
    directory: Path
    """Where the seat works: its project's path (a worktree, once workers have their own)."""
    window: SeatWindow
    started_ms: int
    lifecycle: str = "idle"
    last_active_ms: int | None = None
    failed: str | None = None
    waiting: dict[str, Any] | None = None
    """What the seat waits on (an agent's oldest ask: kind, id, how many behind it)."""
    has_background: bool = False
    terminal: dict[str, Any] | None = None
    processes: list[ProcessRow] | None = None
    background_tasks: list[dict[str, Any]] = field(default_factory=list)
    voice_listeners: int = 0
    """Connections with voice on for the seat (the dictation area keeps it)."""
    told: set[bytes] = field(default_factory=set)
    """The work rows and git layers (encoded) this seat's holders may believe: each snapshot adds
    the one it carried, each `work_changed` replaces them with its own, so a tree scan is news
    unless it is the one thing every holder was told."""

    @property
    def epoch(self) -> str:
        """The seat-run's id: `header.session_id`, and the epoch `seat_range` checks (O-S6)."""
        return self.window.epoch


class SeatRegistry:
    """Every started seat of this run, in start order."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._seats: dict[Seat, SeatState] = {}

    def __iter__(self) -> Iterator[SeatState]:
        return iter(self._seats.values())

    def __len__(self) -> int:
        return len(self._seats)

    def get(self, seat: Seat) -> SeatState | None:
        return self._seats.get(seat)

    def start(self, seat: Seat, config: ForgeConfig) -> tuple[SeatState, bool]:
        """The seat's state, starting it if needed; the flag says whether it started just now."""
        existing = self._seats.get(seat)
        if existing is not None:
            return existing, False
        project = config.project(seat.org, seat.project)
        if project is None:
            raise UnknownProject(seat)
        state = SeatState(
            seat=seat,
            directory=project.path,
            window=SeatWindow(seat, str(uuid.uuid4())),
            started_ms=epoch_ms(self._clock),
        )
        self._seats[seat] = state
        return state, True
