"""What `forge attach` draws and when it ends, decided from the events it reads. Pure.

`AttachView.react(event, hold)` turns one session event into what to do: bytes for the local
terminal (the view's `screen`, then kind-4 chunks above the view's `seq` for the held terminal;
one-line notices) and, once, the `Ending`. It owns no socket and no tty, so every rule here is
tested by feeding events (`tests/client/test_attach_view.py`); `forge.client.attach` does the I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from forge.client.frames import (
    Error,
    Snapshot,
    TerminalControl,
    TerminalOutput,
    TerminalView,
    Update,
)
from forge.client.session import Disconnected, SessionEvent, TerminalHold
from forge.wire.seats import Seat, session

DETACHED = 0
"""Detached with the key, or the shell exited, or the terminal was closed."""
REFUSED = 1
"""The server refused or lost the terminal (an unknown project, a crashed host, a terminal gone
after a reconnect), or attach itself failed."""


@dataclass(frozen=True, slots=True)
class Ending:
    """Why attach ended: what is printed once the tty is restored, and the exit code."""

    why: str
    code: int = DETACHED


@dataclass(frozen=True, slots=True)
class Reaction:
    """What one event comes to: bytes for the local terminal, and maybe the end."""

    output: bytes = b""
    ending: Ending | None = None


NOTHING = Reaction()


def notice(text: str) -> bytes:
    """A line of our own on the person's screen, set apart from the shell's output."""
    return f"\r\n[forge attach: {text}]\r\n".encode()


class AttachView:
    """The drawing state of one attach: the viewer number and the last chunk drawn."""

    def __init__(self, seat: Seat) -> None:
        self.seat = seat
        self.viewer: int | None = None
        """This connection's viewer number, from the last `terminal_view`."""
        self.last_seq = 0
        """The highest chunk the screen reflects; chunks at or below it are not drawn again."""
        self.lost_control = False
        """Another viewer took control from us, and we have not had it back since."""
        self._seat_key = msgspec.to_builtins(seat)

    def react(self, event: SessionEvent, hold: TerminalHold | None) -> Reaction:
        """`hold` is the terminal attached now (None before the first view)."""
        if hold is None:
            return NOTHING
        if isinstance(event, TerminalOutput):
            if event.terminal != hold.id or event.seq <= self.last_seq:
                return NOTHING
            self.last_seq = event.seq
            return Reaction(event.data)
        if isinstance(event, TerminalView):
            if event.id != hold.id:
                return NOTHING
            self.viewer, self.last_seq = event.viewer, event.seq
            return Reaction(event.screen.encode())
        if isinstance(event, TerminalControl):
            return self._control(event, hold)
        if isinstance(event, Update):
            if event.variant == "terminal_changed" and event.body.get("key") == self._seat_key:
                return self.summary(event.body.get("terminal"), hold)
            return NOTHING
        if isinstance(event, Snapshot):
            if event.subject == session(self.seat):
                return self.summary(event.data.get("terminal"), hold)
            return NOTHING
        if isinstance(event, Error):
            if event.what == "terminal_close":
                return Reaction(ending=Ending(event.why))
            if event.what == "terminal_view":
                return Reaction(ending=Ending(event.why, REFUSED))
            return NOTHING
        if isinstance(event, Disconnected):
            text = f"connection lost ({event.reason}); reconnecting - Ctrl-\\ d detaches"
            return Reaction(notice(text))
        return NOTHING

    def _control(self, event: TerminalControl, hold: TerminalHold) -> Reaction:
        """Who holds the terminal's input moved: losing it is said once, with the way back
        (`Ctrl-\\ c`), and so is having it again."""
        if event.id != hold.id:
            return NOTHING
        if hold.control and event.controller not in (None, self.viewer):
            hold.control, self.lost_control = False, True
            return Reaction(
                notice(
                    f"viewer {event.controller} took control; your keys are ignored - "
                    "Ctrl-\\ c takes it back"
                )
            )
        if self.lost_control and event.controller == self.viewer:
            self.lost_control = False
            return Reaction(notice("you have control again"))
        return NOTHING

    def summary(self, terminal: Any, hold: TerminalHold) -> Reaction:
        """The seat's `terminal` row: gone (null), or not alive (exited, or its host died)."""
        if terminal is None:
            return Reaction(ending=Ending(f"the terminal of {self.seat} was closed"))
        if not isinstance(terminal, dict) or terminal.get("id") != hold.id:
            return NOTHING
        if terminal.get("alive") is not False:
            return NOTHING
        if terminal.get("reason"):
            return Reaction(
                ending=Ending(f"the terminal's host stopped ({terminal['reason']})", REFUSED)
            )
        status = terminal.get("exit_status")
        tail = "" if status is None else f" with status {status}"
        return Reaction(ending=Ending(f"the shell exited{tail}"))
