"""Who drives a shared surface and whose size lays it out: one vocabulary for terminals and tabs.

A **viewer** is one connection's attachment to a surface (a terminal, a browser tab); a
surface's viewers are ordered longest-watching first. The **controller** is the one viewer whose
input a surface takes: a take always lands and the old holder loses it (TM09, BR13); only the
holder releases (TM09, BR15); a viewer that leaves (detach, a dropped connection) releases what it
held (TM11, BR05, BR06). The **layout owner** is the viewer whose size the surface takes: the
controller, else the longest-watching viewer (BR08, O-TM4).

Where terminals and tabs differ, the difference is an argument, not a second rule: with no
controller a terminal takes any viewer's keystrokes (O-TM3) and a tab nobody's input (BR13); a
terminal passes over viewers that have sent no size yet, a tab waits for its owner's.

Pure functions of the current holder and the viewers; the caller stores the result. Viewers
are compared with `==` (identity for a dataclass with `eq=False`, value for a viewer id).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Generic, TypeVar

V = TypeVar("V")
"""A viewer as its room knows it: a viewer object, or a viewer id."""


@dataclass(frozen=True, slots=True)
class Handover(Generic[V]):
    """The controller after a take, release or leave, and whether that changed anything (a
    change is what viewers are told about)."""

    controller: V | None
    changed: bool


def take(controller: V | None, taker: V) -> Handover[V]:
    """A take always lands; taking what one already holds changes nothing (O-TM7)."""
    return Handover(taker, controller != taker)


def release(controller: V | None, releaser: V) -> Handover[V]:
    """Only the holder releases; anyone else's release is not theirs to make (TM09, BR15).

    Leaving a surface is a release by the one leaving (TM11, BR05, BR06)."""
    if controller is None or controller != releaser:
        return Handover(controller, False)
    return Handover(None, True)


class WhenFree(Enum):
    """Whose input a surface with no controller takes."""

    ANYONE = "anyone"
    """Any attached viewer's (a terminal, O-TM3: wave 1 has no agent to protect)."""
    NOBODY = "nobody"
    """Nobody's until someone takes control (a browser tab, BR13)."""


def may_drive(controller: V | None, viewer: V, when_free: WhenFree) -> bool:
    """May this attached viewer's input land? With a controller, only the controller's does."""
    if controller is None:
        return when_free is WhenFree.ANYONE
    return controller == viewer


def layout_owner(
    controller: V | None,
    viewers: Iterable[V],
    sized: Callable[[V], bool] = lambda _: True,
) -> V | None:
    """The controller, else the longest-watching viewer (`viewers` in attach order).

    `sized` passes over candidates that cannot lay the surface out yet (a terminal's viewers
    that have sent no size); by default every candidate counts."""
    if controller is not None and sized(controller):
        return controller
    return next((viewer for viewer in viewers if sized(viewer)), None)
