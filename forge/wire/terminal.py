"""What the server tells clients about terminals: typed messages, built and encoded here, decoded
by clients from the same structs.

- `TerminalView` (TM04): a viewer's whole screen as a VT stream; kind-4 chunks above `seq` follow.
- `TerminalControl` (TM09): who controls the terminal now, sent to each of its viewers.
- `TerminalSummary`: the seat's `terminal` row (O-TM5, plus `pid`, `exit_status`, and `reason`
  after a host crash), carried by the seat's snapshot and its `terminal_changed` update
  (`terminal_changed` builds that update's body). The host builds the same struct, so what a
  host says and what a client reads are one shape.
- `ViewOpened` (or `server.Refused`): the body of the `reply` to a `terminal_view` with `reply_to`.
- `host_stopped` / `closed`: the errors that end a viewer's attachment (`what` is the verb a
  client reacts to: `terminal_view` for a crashed host, `terminal_close` for a close).
- `TerminalOutput` / `decode_terminal_output`: a kind-4 frame read back (B09).

The JSON messages are `ServerMessage`s, registered in `forge.wire.registry`; extra fields are
ignored when decoding (servers grow, clients ignore).
"""

from __future__ import annotations

from typing import Any

import msgspec

from forge.wire.binary import TERMINAL_OUTPUT_HEADER
from forge.wire.seats import Seat
from forge.wire.server import Error, ServerMessage


class TerminalSummary(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One terminal as its seat shows it; `reason` appears only once its host is gone."""

    id: int
    shell: str
    pid: int
    cwd: str
    cols: int
    rows: int
    alive: bool
    state: str
    """`starting`, `idle`, `running`, `password` or `exited`."""
    source: str
    """Where `state` came from: `shell_integration`, `process` or `termios`."""
    title: str
    held: bool
    exit_status: int | None
    reason: str | None = None
    """Why the host stopped (it crashed); the shell is gone with it."""

    def host_gone(self, reason: str) -> TerminalSummary:
        """This summary once the host died: not alive, exited, and why."""
        return msgspec.structs.replace(self, alive=False, state="exited", reason=reason)


class TerminalView(ServerMessage, frozen=True, kw_only=True, tag="terminal_view"):
    """A terminal's whole screen as a VT stream; chunks above `seq` follow (TM04)."""

    seat: Seat
    id: int
    cols: int
    rows: int
    seq: int
    screen: str
    viewers: int
    viewer: int
    """This connection's viewer number."""
    controller: int | None


class TerminalControl(ServerMessage, frozen=True, kw_only=True, tag="terminal_control"):
    """Control moved: the controlling viewer's number, or null when nobody holds it."""

    seat: Seat
    id: int
    controller: int | None


class TerminalChanged(msgspec.Struct, frozen=True, kw_only=True):
    """The body of the seat's `terminal_changed` update; `terminal` null once it is closed."""

    key: Seat
    terminal: TerminalSummary | None


class ViewOpened(msgspec.Struct, frozen=True, kw_only=True):
    """The reply body of a served `terminal_view`: the id of the terminal now viewed."""

    ok: bool = True
    id: int


class TerminalOutput(msgspec.Struct, frozen=True):
    """Kind 4: the shell's bytes, numbered per terminal (B09)."""

    terminal: int
    seq: int
    data: bytes


def terminal_changed(seat: Seat, summary: TerminalSummary | None) -> dict[str, Any]:
    """The `terminal_changed` update's body, as the seat's window keeps it for `seat_range`."""
    body: dict[str, Any] = msgspec.to_builtins(TerminalChanged(key=seat, terminal=summary))
    return body


def host_stopped(seat: Seat, terminal: int, reason: str) -> Error:
    """To each viewer of a terminal whose host died: the shell is gone, a new view opens one."""
    why = f"terminal {terminal}'s host stopped ({reason}); a new view opens a fresh shell"
    return Error(what="terminal_view", why=why, seat=seat)


def closed(seat: Seat, terminal: int) -> Error:
    """To each viewer of a terminal that was closed (O-TM10)."""
    return Error(what="terminal_close", why=f"terminal {terminal} closed", seat=seat)


def decode_terminal_output(frame: bytes) -> TerminalOutput | None:
    """A kind-4 frame's terminal, seq and bytes; None when the header is not whole."""
    if len(frame) < TERMINAL_OUTPUT_HEADER.size:
        return None
    _, terminal, seq = TERMINAL_OUTPUT_HEADER.unpack_from(frame)
    return TerminalOutput(terminal, seq, frame[TERMINAL_OUTPUT_HEADER.size :])
