"""Who views which browser tab, who controls it, whose size lays it out: pure, no I/O, no clock.

The supervisor owns these facts (a host restart must not lose what clients were told). Each
connection views at most one tab (one attach per connection, BR05). The rules a tab shares with
a terminal (a take always lands, only the holder releases, the layout owner) are `roles`'s; a
tab's own are that nobody drives it until someone takes control (BR13) and that input lands only
above the seq high-water mark of the current tenure (BR09, O-BR2).
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from dataclasses import dataclass, field
from enum import Enum

from forge.supervisor.socket import roles
from forge.wire.browser import BrowserView

Surface = tuple[str, int]
"""A tab as the supervisor names it: (profile key, tab number)."""


@dataclass(frozen=True)
class Size:
    """A viewer's surface: device pixels and the ratio they draw at (`browser_resize`)."""

    width: int
    height: int
    scale: float


MIN_PX, MAX_PX = 1, 8192
MIN_SCALE, MAX_SCALE = 0.5, 4.0


def check_size(size: Size) -> str | None:
    """O-BR8's bounds, or the sentence refusing a size outside them."""
    if not (MIN_PX <= size.width <= MAX_PX and MIN_PX <= size.height <= MAX_PX):
        return f"width and height must be {MIN_PX}..{MAX_PX} device pixels"
    if not MIN_SCALE <= size.scale <= MAX_SCALE:
        return f"scale must be {MIN_SCALE:g}..{MAX_SCALE:g}"
    return None


@dataclass
class Viewer:
    id: int
    connection: Hashable
    surface: Surface
    order: int
    """Attach order: the smallest among a tab's viewers is its longest-watching one."""
    jpeg: bool
    """The connection declared `formats=webp,jpeg` (D3)."""
    size: Size | None = None


@dataclass(frozen=True)
class Attached:
    viewer: Viewer
    left: Surface | None
    """The tab this connection viewed before, when the attach moved it (its role is gone)."""
    released: bool
    """The connection held the controller role on the tab it left."""
    same_surface: bool


WHEN_FREE = roles.WhenFree.NOBODY
"""BR13: no default controller; a tab nobody has taken takes nobody's input."""


class Verdict(Enum):
    LANDS = "lands"
    UNATTACHED = "unattached"
    NOT_CONTROLLER = "not_controller"
    STALE = "stale"


@dataclass
class RoleTable:
    _viewers: dict[Hashable, Viewer] = field(default_factory=dict)
    _controllers: dict[Surface, int] = field(default_factory=dict)
    _high_water: dict[Surface, int] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _order: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def viewer_of(self, connection: Hashable) -> Viewer | None:
        return self._viewers.get(connection)

    def viewers(self, surface: Surface) -> list[Viewer]:
        """The tab's viewers, longest-watching first."""
        found = [v for v in self._viewers.values() if v.surface == surface]
        return sorted(found, key=lambda v: v.order)

    def surfaces(self, profile: str | None = None) -> set[Surface]:
        return {v.surface for v in self._viewers.values() if profile in (None, v.surface[0])}

    def controller(self, surface: Surface) -> Viewer | None:
        viewer_id = self._controllers.get(surface)
        return next((v for v in self.viewers(surface) if v.id == viewer_id), None)

    def formats(self, surface: Surface) -> tuple[bool, bool]:
        """(webp, jpeg): which motion formats the tab's viewers read."""
        viewers = self.viewers(surface)
        return any(not v.jpeg for v in viewers), any(v.jpeg for v in viewers)

    def attach(self, connection: Hashable, surface: Surface, *, jpeg: bool) -> Attached:
        """BR05: the same tab keeps the viewer and its role; another releases the old first."""
        current = self._viewers.get(connection)
        if current is not None and current.surface == surface:
            return Attached(current, None, False, True)
        left, released = None, False
        if current is not None:
            left = current.surface
            released = self.detach(connection)
        viewer = Viewer(next(self._ids), connection, surface, next(self._order), jpeg)
        self._viewers[connection] = viewer
        return Attached(viewer, left, released, False)

    def detach(self, connection: Hashable) -> bool:
        """Stop viewing; True when the connection held the controller role (now released)."""
        viewer = self._viewers.pop(connection, None)
        if viewer is None:
            return False
        return self._drop_role(viewer)

    def take(self, connection: Hashable) -> Viewer | None:
        """BR13: the role moves to the caller (None: unattached); its seq count starts over."""
        viewer = self._viewers.get(connection)
        if viewer is None:
            return None
        if roles.take(self._controllers.get(viewer.surface), viewer.id).changed:
            self._controllers[viewer.surface] = viewer.id
            self._high_water.pop(viewer.surface, None)
        return viewer

    def release(self, connection: Hashable) -> bool:
        """Give the role back; True only when the connection actually held it (BR15)."""
        viewer = self._viewers.get(connection)
        return viewer is not None and self._drop_role(viewer)

    def forget_profile(self, profile: str) -> list[Viewer]:
        """The profile's host is gone: every viewer of it is detached; they are returned."""
        gone = [v for v in self._viewers.values() if v.surface[0] == profile]
        for viewer in gone:
            self.detach(viewer.connection)
        return gone

    def layout_owner(self, surface: Surface) -> Viewer | None:
        """BR08: the controller, else the longest-watching viewer."""
        return roles.layout_owner(self.controller(surface), self.viewers(surface))

    def layout(self, surface: Surface) -> Size | None:
        """The size the tab should have now: its layout owner's last size, if it sent one."""
        owner = self.layout_owner(surface)
        return owner.size if owner is not None else None

    def input(self, connection: Hashable, seq: int) -> Verdict:
        """BR09-BR11: may this connection's gesture numbered `seq` land?"""
        viewer = self._viewers.get(connection)
        if viewer is None:
            return Verdict.UNATTACHED
        if not roles.may_drive(self._controllers.get(viewer.surface), viewer.id, WHEN_FREE):
            return Verdict.NOT_CONTROLLER
        if seq <= self._high_water.get(viewer.surface, -1):
            return Verdict.STALE
        self._high_water[viewer.surface] = seq
        return Verdict.LANDS

    def view_state(self, viewer: Viewer, profile_id: int) -> BrowserView:
        """BR07's `browser_view` for one viewer: the same truth for every viewer of a tab."""
        controller = self.controller(viewer.surface)
        return BrowserView(
            id=profile_id,
            profile=viewer.surface[0],
            tab=viewer.surface[1],
            controller=controller.id if controller is not None else None,
            viewers=len(self.viewers(viewer.surface)),
            viewer=viewer.id,
        )

    def _drop_role(self, viewer: Viewer) -> bool:
        if not roles.release(self._controllers.get(viewer.surface), viewer.id).changed:
            return False
        del self._controllers[viewer.surface]
        self._high_water.pop(viewer.surface, None)
        return True
