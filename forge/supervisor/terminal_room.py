"""Who watches a terminal and who types: viewers, the controller, and whose size applies. Pure.

The supervisor owns these facts (not the host) so a host crash never loses what clients were
told. Rules (TM09, TM11, O-TM3, O-TM4, O-TM6): viewer numbers are unique per run and survive a
pause; one controller at a time, a take always lands and a release by anyone else changes
nothing; with a controller only its keystrokes land, with none any attached viewer's do; the
PTY takes the controller's size, else the longest-watching viewer's.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from forge.wire.seats import Seat

C = TypeVar("C", bound=Hashable)
"""The connection type (the supervisor's `Connection`; anything hashable in tests)."""


@dataclass(eq=False)
class Viewer(Generic[C]):
    """One connection's attachment to one terminal (its flow is `terminal_flow.ViewerFlow`)."""

    number: int
    connection: C
    size: tuple[int, int] | None = None
    """(cols, rows) the viewer's surface asked for, None until its first resize."""


@dataclass(eq=False)
class TerminalRoom(Generic[C]):
    """One terminal's attachments, in attach order (the first is the longest watching)."""

    id: int
    seat: Seat
    viewers: dict[C, Viewer[C]] = field(default_factory=dict)
    controller: Viewer[C] | None = None
    size: tuple[int, int] = (80, 24)
    """The size the PTY has now."""

    def attach(self, connection: C, number: int) -> Viewer[C]:
        viewer = Viewer(number, connection)
        self.viewers[connection] = viewer
        return viewer

    def detach(self, connection: C) -> tuple[Viewer[C] | None, bool]:
        """Remove the connection's viewer; the flag says it held control (now released)."""
        viewer = self.viewers.pop(connection, None)
        released = viewer is not None and viewer is self.controller
        if released:
            self.controller = None
        return viewer, released

    def take(self, viewer: Viewer[C]) -> bool:
        """Give `viewer` control (it always lands); False when it already held it (O-TM7)."""
        if self.controller is viewer:
            return False
        self.controller = viewer
        return True

    def release(self, viewer: Viewer[C]) -> bool:
        """Only the holder can give control back; True when it did."""
        if self.controller is not viewer:
            return False
        self.controller = None
        return True

    def may_type(self, viewer: Viewer[C]) -> bool:
        return self.controller is None or self.controller is viewer

    def wanted_size(self) -> tuple[int, int] | None:
        """The controller's size, else the longest-watching viewer's that has one."""
        if self.controller is not None and self.controller.size is not None:
            return self.controller.size
        for viewer in self.viewers.values():
            if viewer.size is not None:
                return viewer.size
        return None
