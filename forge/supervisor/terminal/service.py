"""The terminal verbs on the socket, served by one terminal host worker per terminal.

`TerminalService.install` registers `terminal_view`, `terminal_detach`, `terminal_resize`,
`terminal_pause`, `terminal_ack`, `terminal_control`, `terminal_close` and kind-5 input on the
`Supervisor`.
The hosts do the PTY work; the supervisor owns what clients are told, in three parts: `hosts`
(each terminal's life: ids from 1, never reused in a run, its host, the seat's `terminal` summary
published as `terminal_changed`), `relay` (views and chunks to each viewer, the flow the host is
told) and this module (the verbs, who views and controls which terminal: `TerminalRoom`, and
keystrokes).

A seat's `last_active_ms` (home's agents row, `forge status`) is the last time its terminal
wrote output or was typed into; home hears of it at most every `ACTIVITY_PUSH_MS`.

The parts speak to hosts only through `forge.workers.terminal.protocol`, and build what clients
see with `forge.wire.terminal`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from forge.clock import epoch_ms
from forge.errors import UserError
from forge.ipc.manager import WorkerManager
from forge.logs import get_logger
from forge.supervisor.service import WorkerService
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.terminal.hosts import Terminal, TerminalHosts
from forge.supervisor.terminal.relay import Relay
from forge.supervisor.terminal.room import Viewer, number_of
from forge.wire import server
from forge.wire import terminal as wire
from forge.wire.binary import TerminalInput
from forge.wire.client import (
    TerminalAck,
    TerminalClose,
    TerminalControl,
    TerminalDetach,
    TerminalPause,
    TerminalResize,
    TerminalView,
)
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat
from forge.workers.terminal.protocol import (
    MAX_COLS,
    MAX_ROWS,
    MIN_COLS,
    MIN_ROWS,
    Resize,
    size_fits,
)

log = get_logger(__name__)

ACTIVITY_PUSH_MS = 30_000
"""A seat's new `last_active_ms` is pushed to home at most this often (a flood would otherwise
push a row per frame); a snapshot always reads the exact time."""


def activity_push_due(pushed_ms: int | None, now_ms: int) -> bool:
    """Whether a seat active at `now_ms` is announced again, last announced at `pushed_ms`."""
    return pushed_ms is None or now_ms - pushed_ms >= ACTIVITY_PUSH_MS


class TerminalHeld(UserError):
    """A person holds the terminal's control: the agent's terminal tools are refused (TM10)."""


class TerminalService(WorkerService):
    """Serves the terminal verbs; `host_config` adds settings to every host (tests: `argv`)."""

    name = "terminal"

    def __init__(
        self,
        supervisor: Supervisor,
        manager: WorkerManager,
        *,
        host_config: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(supervisor, manager)
        self.host_config = dict(host_config or {})
        self.attached: dict[Connection, Terminal] = {}
        """The terminal each connection views."""
        self.hosts = TerminalHosts(self)
        self.relay = Relay(self)
        self._viewer_numbers = itertools.count(1)
        self._activity_pushed: dict[Seat, int] = {}
        """When each seat's activity was last announced to home."""

    def install(self) -> None:
        supervisor = self.supervisor
        supervisor.register_verb(TerminalView, self._view)
        supervisor.register_verb(TerminalDetach, self._detach_verb)
        supervisor.register_verb(TerminalResize, self._resize)
        supervisor.register_verb(TerminalPause, self._pause)
        supervisor.register_verb(TerminalAck, self._ack)
        supervisor.register_verb(TerminalControl, self._control)
        supervisor.register_verb(TerminalClose, self._close_verb)
        supervisor.register_binary_now(TerminalInput, self._input)
        supervisor.on_disconnect(self._detach)
        supervisor.on_shutdown(self.close_all)
        super().install()

    # --- the internal tool API ---------------------------------------------------------

    def agent_write(self, seat: Seat, data: bytes) -> None:
        """The agent's keystrokes; refused while a person holds control (TM10)."""
        terminal = self.hosts.of_seat(seat)
        if terminal is None or terminal.gone is not None:
            raise TerminalHeld(f"seat {seat} has no open terminal")
        controller = terminal.room.controller
        if controller is not None:
            raise TerminalHeld(
                f"terminal {terminal.room.id} is controlled by viewer {controller.number}; "
                "the agent's terminal tools wait until it is released"
            )
        self._type(terminal, data)

    def shell_pids(self, seat: Seat) -> list[int]:
        """The pids of the seat's live shells: the roots of its process view (H12)."""
        return sorted(
            terminal.summary.pid
            for terminal in self.hosts.terminals.values()
            if terminal.room.seat == seat
            and terminal.gone is None
            and terminal.summary is not None
            and terminal.summary.alive
        )

    async def close_all(self) -> None:
        for terminal in list(self.hosts.terminals.values()):
            await self.hosts.close(terminal, notify=False)

    # --- verbs -------------------------------------------------------------------------

    async def _view(self, connection: Connection, message: TerminalView) -> None:
        seat = message.seat
        try:
            terminal = await self.hosts.to_view(seat, message.id)
        except ClientRefusal as refusal:
            if message.reply_to is None:
                raise
            connection.send(
                server.Reply(reply_to=message.reply_to, body=server.Refused(why=refusal.why))
            )
            return
        self._detach(connection)
        viewer = terminal.room.attach(connection, next(self._viewer_numbers))
        terminal.flow.attach(connection)
        self.attached[connection] = terminal
        log.info("terminal_attach", seat=str(seat), id=terminal.room.id, viewer=viewer.number)
        if message.reply_to is not None:
            connection.send(
                server.Reply(reply_to=message.reply_to, body=wire.ViewOpened(id=terminal.room.id))
            )
        await self.relay.sync(terminal, viewer)

    async def _detach_verb(self, connection: Connection, message: TerminalDetach) -> None:
        self._detach(connection)

    async def _resize(self, connection: Connection, message: TerminalResize) -> None:
        terminal, viewer = self._attachment(connection, "terminal_resize", message.seat, message.id)
        if not size_fits(message.cols, message.rows):
            raise ClientRefusal(
                "terminal_resize",
                f"a terminal is {MIN_COLS}..{MAX_COLS} columns by {MIN_ROWS}..{MAX_ROWS} rows, "
                f"not {message.cols}x{message.rows}",
                message.seat,
            )
        viewer.size = (message.cols, message.rows)
        await self._apply_size(terminal)

    async def _pause(self, connection: Connection, message: TerminalPause) -> None:
        terminal, viewer = self._attachment(connection, "terminal_pause")
        flow = terminal.flow.viewers[connection]
        if message.paused:
            flow.paused = True
            self.relay.refresh_mute(terminal)
            self.relay.refresh_pace(terminal)
        elif flow.paused:
            flow.paused = False
            await self.relay.sync(terminal, viewer)

    async def _ack(self, connection: Connection, message: TerminalAck) -> None:
        terminal, viewer = self._attachment(connection, "terminal_ack")
        news = terminal.flow.viewers[connection].acked(message.seq)
        if news and viewer is terminal.room.controller:
            self.relay.refresh_pace(terminal, parsed=message.seq)

    async def _control(self, connection: Connection, message: TerminalControl) -> None:
        terminal, viewer = self._attachment(
            connection, "terminal_control", message.seat, message.id
        )
        room = terminal.room
        changed = room.take(viewer) if message.take else room.release(viewer)
        if changed:
            log.info("terminal_control", id=room.id, viewer=viewer.number, take=message.take)
            self._tell_control(terminal)
            await self._apply_size(terminal)

    async def _close_verb(self, connection: Connection, message: TerminalClose) -> None:
        terminal = self.hosts.terminals.get(message.id)
        if terminal is None or terminal.room.seat != message.seat:
            raise ClientRefusal(
                "terminal_close",
                f"terminal {message.id} is not a terminal of seat {message.seat}",
                message.seat,
            )
        await self.hosts.close(terminal, notify=True)

    def _input(self, connection: Connection, frame: TerminalInput) -> None:
        terminal = self.attached.get(connection)
        viewer = terminal.room.viewers.get(connection) if terminal is not None else None
        if terminal is None or viewer is None or frame.terminal != terminal.room.id:
            log.debug("terminal_input_dropped", peer=connection.peer, id=frame.terminal)
            return
        if not terminal.room.may_type(viewer):
            log.debug("terminal_input_refused", peer=connection.peer, viewer=viewer.number)
            return
        self._type(terminal, frame.data)

    def _type(self, terminal: Terminal, data: bytes) -> None:
        """Keystrokes to the shell, written by the supervisor itself: no hop through the host."""
        self.active(terminal)
        keys = terminal.keys
        if keys is not None and not keys.write(data) and not keys.closed:
            log.info(
                "terminal_input_full", id=terminal.room.id, bytes=len(data), waiting=keys.pending
            )

    def active(self, terminal: Terminal) -> None:
        """The terminal wrote or was typed into: the seat's last activity is now."""
        seat = terminal.room.seat
        state = self.supervisor.seats.get(seat)
        if state is None:
            return
        now = epoch_ms(self.supervisor.clock)
        state.last_active_ms = now
        if activity_push_due(self._activity_pushed.get(seat), now):
            self._activity_pushed[seat] = now
            terminal.tasks.spawn(self.supervisor.publish_agents_row(state))

    # --- attachments -------------------------------------------------------------------

    def _attachment(
        self, connection: Connection, what: str, seat: Seat | None = None, id: int | None = None
    ) -> tuple[Terminal, Viewer[Connection]]:
        """The connection's terminal and viewer, or a refusal naming `what` (O-TM2)."""
        terminal = self.attached.get(connection)
        viewer = terminal.room.viewers.get(connection) if terminal is not None else None
        if terminal is None or viewer is None:
            raise ClientRefusal(what, "this connection is not viewing a terminal", seat)
        if seat is not None and (terminal.room.seat != seat or terminal.room.id != id):
            raise ClientRefusal(
                what,
                f"this connection views terminal {terminal.room.id} of seat {terminal.room.seat}, "
                f"not terminal {id} of seat {seat}",
                seat,
            )
        return terminal, viewer

    def _detach(self, connection: Connection) -> None:
        """Lowering the surface, a new view, or a dropped connection: stop viewing, release."""
        terminal = self.attached.pop(connection, None)
        if terminal is None:
            return
        viewer, released = terminal.room.detach(connection)
        terminal.flow.detach(connection)
        if viewer is not None:
            log.info("terminal_detach", id=terminal.room.id, viewer=viewer.number)
        if released:
            self._tell_control(terminal)
        self.relay.refresh_mute(terminal)
        terminal.tasks.spawn(self._apply_size(terminal))

    def _tell_control(self, terminal: Terminal) -> None:
        terminal.control_moved.set()
        terminal.control_moved.clear()
        self.relay.refresh_pace(terminal)
        room = terminal.room
        frame = server.JsonFrame.encode(
            wire.TerminalControl(seat=room.seat, id=room.id, controller=number_of(room.controller))
        )
        for viewer in room.viewers.values():
            viewer.connection.send_frame(frame)

    async def _apply_size(self, terminal: Terminal) -> None:
        """Resize the PTY to the size the rule picks, unless it is already in place."""
        room = terminal.room
        wanted = room.wanted_size()
        if wanted is None or wanted == room.size or terminal.gone is not None:
            return
        room.size = wanted
        cols, rows = wanted
        await self.tell(
            terminal.handle, Resize(cols=cols, rows=rows), "terminal_resize_failed", id=room.id
        )


def install(
    supervisor: Supervisor, manager: WorkerManager, *, host_config: Mapping[str, Any] | None = None
) -> TerminalService:
    """Serve the terminal verbs on `supervisor` with hosts started by `manager`."""
    service = TerminalService(supervisor, manager, host_config=host_config)
    service.install()
    return service
