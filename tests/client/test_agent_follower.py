"""`forge agent prompt`'s reading of a turn, free of I/O: after Ctrl-C sent `cancel`, a command
error answers the cancel (the turn ended as it was sent) and is no refusal of the prompt, and
the exit status and its sentence follow the turn's own end."""

from __future__ import annotations

import io
from typing import Any

from forge.client.agent import (
    COMPLETED,
    INTERRUPTED,
    NOT_COMPLETED,
    TurnFollower,
    exit_status,
)
from forge.wire.seats import Seat
from forge.wire.server import Error, Update

SEAT = Seat(org="acme", project="web", label="main")
KEY = {"org": "acme", "project": "web", "label": "main"}


def appended(message: dict[str, Any]) -> Update:
    return Update.of("chat_appended", {"key": KEY, "msg": message}, seq=1)


def ended(uuid: str, outcome: str) -> Update:
    body = {"key": KEY, "uuid": uuid, "phase": "ended", "outcome": outcome}
    return Update.of("prompt_lifecycle", body, seq=2)


def followed(*frames: Any, cancelled_after: int | None = None) -> tuple[TurnFollower, str]:
    follower = TurnFollower("Talk.")
    shown = ""
    for number, frame in enumerate(frames):
        if number == cancelled_after:
            follower.cancelled = True
        shown += follower.read(frame)
    return follower, shown


USER = appended({"type": "user", "uuid": "u1", "text": "Talk."})
DELTA = appended({"type": "delta", "kind": "text", "text": "Hello"})
LATE_CANCEL = Error(what="command", why="no turn is running on seat acme/web/main", seat=SEAT)


def test_a_cancel_that_came_after_the_turn_ended_is_no_refusal_and_the_turn_completed() -> None:
    follower, shown = followed(
        USER, DELTA, LATE_CANCEL, ended("u1", "completed"), cancelled_after=2
    )
    assert follower.refusal is None
    assert shown == "Hello\n"
    err = io.StringIO()
    assert exit_status(follower, SEAT, err) == COMPLETED
    assert err.getvalue() == ""


def test_an_interrupted_turn_exits_130_saying_so() -> None:
    follower, _ = followed(USER, DELTA, ended("u1", "interrupted"), cancelled_after=2)
    err = io.StringIO()
    assert exit_status(follower, SEAT, err) == INTERRUPTED
    assert (
        err.getvalue()
        == "forge agent prompt: interrupted: the turn on acme/web/main was cancelled\n"
    )


def test_a_refused_prompt_and_a_failed_turn_exit_1_naming_why() -> None:
    refused, _ = followed(Error(what="command", why="seat acme/web/main has no agent", seat=SEAT))
    assert refused.over
    err = io.StringIO()
    assert exit_status(refused, SEAT, err) == NOT_COMPLETED
    assert err.getvalue() == "forge agent prompt: refused: seat acme/web/main has no agent\n"
    failed, _ = followed(USER, ended("u1", "failed"))
    err = io.StringIO()
    assert exit_status(failed, SEAT, err) == NOT_COMPLETED
    assert err.getvalue() == "forge agent prompt: the turn on acme/web/main ended failed\n"
