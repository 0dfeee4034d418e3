"""Who watches a terminal and who types: viewers, the controller, and whose size applies. Pure.

The supervisor owns these facts (not the host) so a host crash never loses what clients were
told. The rules are `forge.supervisor.socket.roles`' (shared with browser tabs), with a terminal's
choices: with no controller any attached viewer's keystrokes land (O-TM3), and the PTY takes the
layout owner's size, passing over viewers that have sent none. Viewer numbers are unique per run
and survive a pause (O-TM6).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from forge.supervisor.socket import roles
from forge.wire.seats import Seat

C = TypeVar("C", bound=Hashable)
"""The connection type (the supervisor's `Connection`; anything hashable in tests)."""


@dataclass(eq=False)
class Viewer(Generic[C]):
    """One connection's attachment to one terminal (its flow is `flow.ViewerFlow`)."""

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
        if viewer is None:
            return None, False
        return viewer, self.release(viewer)

    def take(self, viewer: Viewer[C]) -> bool:
        """Give `viewer` control (it always lands); False when it already held it (O-TM7)."""
        handover = roles.take(self.controller, viewer)
        self.controller = handover.controller
        return handover.changed

    def release(self, viewer: Viewer[C]) -> bool:
        """Only the holder can give control back; True when it did."""
        handover = roles.release(self.controller, viewer)
        self.controller = handover.controller
        return handover.changed

    def may_type(self, viewer: Viewer[C]) -> bool:
        return roles.may_drive(self.controller, viewer, roles.WhenFree.ANYONE)

    def wanted_size(self) -> tuple[int, int] | None:
        """The controller's size, else the longest-watching viewer's that has one."""
        owner = roles.layout_owner(
            self.controller, self.viewers.values(), sized=lambda viewer: viewer.size is not None
        )
        return owner.size if owner is not None else None


def number_of(viewer: Viewer[C] | None) -> int | None:
    """The viewer's number as clients are told it (`controller`), None for nobody."""
    return viewer.number if viewer is not None else None
