"""What attach draws and when it stops, from events alone (no socket, no tty)."""

from __future__ import annotations

from typing import Any

from forge.client.attach_view import REFUSED, AttachView, Ending, Reaction, notice
from forge.client.frames import (
    Error,
    Greeting,
    Snapshot,
    TerminalControl,
    TerminalOutput,
    TerminalView,
    Update,
)
from forge.client.session import Disconnected, Reconnected, TerminalHold
from forge.wire.seats import HOME, Seat, session

SEAT = Seat("acme", "proj", "lead")
KEY = {"org": "acme", "project": "proj", "label": "lead"}


def view(seq: int = 5, *, terminal: int = 1, viewer: int = 3) -> TerminalView:
    return TerminalView(
        seat=SEAT, id=terminal, cols=80, rows=24, seq=seq, screen="\x1bc$ ",
        viewers=1, viewer=viewer, controller=viewer,
    )  # fmt: skip


def changed(terminal: dict[str, Any] | None, key: dict[str, str] = KEY) -> Update:
    return Update.of("terminal_changed", {"key": key, "terminal": terminal}, seq=9)


def test_the_screen_then_only_chunks_above_its_seq() -> None:
    attach, hold = AttachView(SEAT), TerminalHold(SEAT, 1)
    assert attach.react(view(seq=5), hold) == Reaction(b"\x1bc$ ")
    assert attach.react(TerminalOutput(1, 5, b"old"), hold) == Reaction()
    assert attach.react(TerminalOutput(1, 6, b"new"), hold) == Reaction(b"new")
    assert attach.react(TerminalOutput(1, 6, b"again"), hold) == Reaction()
    assert attach.react(TerminalOutput(2, 7, b"other terminal"), hold) == Reaction()


def test_a_fresh_view_resets_the_seq_even_backwards() -> None:
    attach, hold = AttachView(SEAT), TerminalHold(SEAT, 1)
    attach.react(view(seq=50), hold)
    assert attach.react(view(seq=40), hold).output == b"\x1bc$ "
    assert attach.react(TerminalOutput(1, 41, b"x"), hold) == Reaction(b"x")


def test_nothing_is_drawn_before_a_terminal_is_held() -> None:
    assert AttachView(SEAT).react(view(), None) == Reaction()


def test_losing_control_to_another_viewer_is_said_once() -> None:
    attach, hold = AttachView(SEAT), TerminalHold(SEAT, 1, control=True)
    attach.react(view(viewer=3), hold)
    assert attach.react(TerminalControl(seat=SEAT, id=1, controller=3), hold) == Reaction()
    taken = attach.react(TerminalControl(seat=SEAT, id=1, controller=4), hold)
    assert taken == Reaction(
        notice("viewer 4 took control; your keys are ignored - Ctrl-\\ c takes it back")
    )
    assert not hold.control
    assert attach.react(TerminalControl(seat=SEAT, id=1, controller=5), hold) == Reaction()


def test_control_taken_back_is_said_once() -> None:
    """Issue 13 item 16: the notice names the way back, and having control again is said."""
    attach, hold = AttachView(SEAT), TerminalHold(SEAT, 1, control=True)
    attach.react(view(viewer=3), hold)
    attach.react(TerminalControl(seat=SEAT, id=1, controller=4), hold)
    hold.control = True  # what ClientSession.take_control records when Ctrl-\ c is pressed
    back = attach.react(TerminalControl(seat=SEAT, id=1, controller=3), hold)
    assert back == Reaction(notice("you have control again"))
    assert attach.react(TerminalControl(seat=SEAT, id=1, controller=3), hold) == Reaction()


def test_the_shell_exiting_ends_with_its_status() -> None:
    attach, hold = AttachView(SEAT), TerminalHold(SEAT, 1)
    assert attach.react(changed({"id": 1, "alive": True, "state": "running"}), hold) == Reaction()
    ended = attach.react(changed({"id": 1, "alive": False, "exit_status": 7}), hold)
    assert ended.ending == Ending("the shell exited with status 7", 0)


def test_a_dead_host_ends_with_its_reason_and_exit_1() -> None:
    attach, hold = AttachView(SEAT), TerminalHold(SEAT, 1)
    ended = attach.react(changed({"id": 1, "alive": False, "reason": "worker_crashed"}), hold)
    assert ended.ending == Ending("the terminal's host stopped (worker_crashed)", REFUSED)


def test_a_closed_terminal_ends_attach() -> None:
    attach, hold = AttachView(SEAT), TerminalHold(SEAT, 1)
    assert attach.react(changed(None), hold).ending == Ending(
        "the terminal of acme/proj/lead was closed"
    )
    closed = Error(what="terminal_close", why="terminal 1 closed", seat=SEAT)
    assert attach.react(closed, hold).ending == Ending("terminal 1 closed")
    lost = Error(what="terminal_view", why="terminal 1's host stopped", seat=SEAT)
    assert attach.react(lost, hold).ending == Ending("terminal 1's host stopped", REFUSED)


def test_other_seats_other_terminals_and_other_errors_change_nothing() -> None:
    attach, hold = AttachView(SEAT), TerminalHold(SEAT, 1)
    elsewhere = {"org": "acme", "project": "proj", "label": "other"}
    assert attach.react(changed(None, key=elsewhere), hold) == Reaction()
    assert attach.react(changed({"id": 2, "alive": False}), hold) == Reaction()
    assert attach.react(Error(what="subscribe", why="no"), hold) == Reaction()
    assert attach.react(Snapshot(subject=HOME, data={"terminal": None}), hold) == Reaction()


def test_a_session_snapshot_is_checked_like_an_update() -> None:
    attach, hold = AttachView(SEAT), TerminalHold(SEAT, 1)
    snapshot = Snapshot(subject=session(SEAT), data={"terminal": {"id": 1, "alive": False}})
    assert attach.react(snapshot, hold).ending == Ending("the shell exited")


def test_a_lost_link_is_said_and_a_reconnect_draws_nothing_itself() -> None:
    attach, hold = AttachView(SEAT), TerminalHold(SEAT, 1)
    assert attach.react(Disconnected("closed by the server (code 1001)"), hold) == Reaction(
        notice(
            "connection lost (closed by the server (code 1001)); reconnecting - Ctrl-\\ d detaches"
        )
    )
    greeting = Greeting(version=29, forge_version="0 · a", forge_version_short="0+a", settings={})
    assert attach.react(Reconnected(greeting), hold) == Reaction()
