"""Seats and subjects in their wire shapes (enums externally tagged, as serde writes them).

A seat is `{"org", "project", "label"}` wherever a verb names one (`seat`, `key`, `slot`,
`session`: four names, one shape, O-S1). A subject is a bare string for the unit subjects and
`{"session": {...}}` for a seat (O-S2). Both are frozen, so they key dictionaries and counters.
"""

from __future__ import annotations

from typing import Literal

import msgspec


class Seat(msgspec.Struct, frozen=True):
    """One seat: a label under a configured project of an org."""

    org: str
    project: str
    label: str

    def __str__(self) -> str:
        return f"{self.org}/{self.project}/{self.label}"


class SessionSubject(msgspec.Struct, frozen=True):
    """The `session <org>/<project>/<label>` subject: `{"session": {org, project, label}}`."""

    session: Seat


UnitSubject = Literal["home", "board", "usage", "dictate_models", "extensions", "lab"]
"""The subjects that are no seat; D1: each answers a snapshot, never an error. `lab` is our
addition (`forge.wire.lab`)."""

Subject = UnitSubject | SessionSubject
"""What `subscribe`/`unsubscribe` name and `snapshot.subject` echoes."""

HOME: UnitSubject = "home"


def session(seat: Seat) -> SessionSubject:
    """The subject of one seat."""
    return SessionSubject(seat)
