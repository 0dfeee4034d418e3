"""The terminal verbs on the socket, served by one terminal host worker per terminal.

`TerminalService.install` registers `terminal_view`, `terminal_detach`, `terminal_resize`,
`terminal_pause`, `terminal_ack`, `terminal_control`, `terminal_close` and kind-5 input on the
`Supervisor`.
The hosts do the PTY work; this module owns what clients are told: terminal ids (from 1, never
reused in a run), viewers and control (`TerminalRoom`), each viewer's flow, and the seat's
`terminal` summary published as `terminal_changed`.

A seat's `last_active_ms` (home's agents row, `forge status`) is the last time its terminal
wrote output or was typed into; home hears of it at most every `ACTIVITY_PUSH_MS`.

Chunks are relayed as the host framed them (one bytes object for every viewer); every flow
decision (per-viewer bounds and resyncs, the controller's throttle, muting the host, held
chunks) is `flow`'s, and its docstring says how they fit together. It speaks to hosts
only through `forge.workers.terminal.protocol`, and builds what clients see with
`forge.wire.terminal`.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import msgspec

from forge.clock import epoch_ms
from forge.errors import UserError
from forge.ipc.manager import WorkerHandle, WorkerManager
from forge.ipc.messages import StreamFrame
from forge.ipc.streams import Subscription
from forge.logs import get_logger
from forge.ptyinput import PtyInput
from forge.supervisor.service import TaskSet, WorkerService
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.seats import SeatState, UnknownProject
from forge.supervisor.terminal.flow import (
    FLOW_LOW,
    SEND,
    Mute,
    TerminalFlow,
    ViewerFlow,
    chunk_limit,
)
from forge.supervisor.terminal.room import TerminalRoom, Viewer
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
    OUTPUT_STREAM,
    TERMINAL,
    Close,
    Flow,
    HostConfig,
    Resize,
    Summary,
    View,
    read_output_meta,
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


@dataclass(eq=False)
class _Terminal:
    """One terminal: its room, its flow, its host, and the last summary published."""

    room: TerminalRoom[Connection]
    handle: WorkerHandle
    summary: wire.TerminalSummary | None = None
    flow: TerminalFlow[Connection] = field(default_factory=TerminalFlow)
    subscription: Subscription | None = None
    keys: PtyInput | None = None
    """Writes keystrokes to the PTY master the host lent (`forge.ipc.lending`), from `_open`."""
    gone: str | None = None
    """Why the host is gone (it crashed): no view can be drawn any more."""
    closing: bool = False
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once `_close` has finished: a second close waits for the first, never repeats it."""
    control_moved: asyncio.Event = field(default_factory=asyncio.Event)
    """Set on each change of controller, so a throttle held for the old one ends."""
    key: tuple[str, int] = ("terminal", 0)
    """The connections' stream key for this terminal's chunks."""
    tasks: TaskSet = field(default_factory=lambda: TaskSet("terminal"))
    """Work for this terminal only (a resize, a resync, a flow message): cancelled at its close."""


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
        self._host_config = dict(host_config or {})
        self._terminals: dict[int, _Terminal] = {}
        self._current: dict[Seat, int] = {}
        """The seat's terminal: what an id-less view opens and the session's `terminal` shows."""
        self._attached: dict[Connection, _Terminal] = {}
        self._opening: defaultdict[Seat, asyncio.Lock] = defaultdict(asyncio.Lock)
        """Id-less views of one seat, one at a time: two viewers arriving together (a phone and
        a desktop, or both after a host crash) share one new shell instead of each closing the
        other's while it starts."""
        self._ids = itertools.count(1)
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
        terminal = self._terminals.get(self._current.get(seat, 0))
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
            for terminal in self._terminals.values()
            if terminal.room.seat == seat
            and terminal.gone is None
            and terminal.summary is not None
            and terminal.summary.alive
        )

    async def close_all(self) -> None:
        for terminal in list(self._terminals.values()):
            await self._close(terminal, notify=False)

    # --- verbs -------------------------------------------------------------------------

    async def _view(self, connection: Connection, message: TerminalView) -> None:
        seat = message.seat
        try:
            terminal = await self._terminal_to_view(seat, message.id)
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
        self._attached[connection] = terminal
        log.info("terminal_attach", seat=str(seat), id=terminal.room.id, viewer=viewer.number)
        if message.reply_to is not None:
            connection.send(
                server.Reply(reply_to=message.reply_to, body=wire.ViewOpened(id=terminal.room.id))
            )
        await self._sync(terminal, viewer)

    async def _terminal_to_view(self, seat: Seat, wanted: int | None) -> _Terminal:
        try:
            state = await self.supervisor.start_seat(seat)
        except UnknownProject as error:
            raise _refused(str(error), seat) from None
        if wanted is not None:
            terminal = self._terminals.get(wanted)
            if terminal is None or terminal.room.seat != seat:
                raise _refused(f"terminal {wanted} is not a terminal of seat {seat}", seat)
            if terminal.gone is not None:
                why = f"terminal {wanted} is gone ({terminal.gone}); open a new one"
                raise _refused(why, seat)
            return terminal
        async with self._opening[seat]:
            current = self._terminals.get(self._current.get(seat, 0))
            if current is not None and current.gone is None and _alive(current.summary):
                return current
            if current is not None:
                await self._close(current, notify=True)
            return await self._open(state)

    async def _open(self, state: SeatState) -> _Terminal:
        config = self.supervisor.loaded.config
        project = config.project(state.seat.org, state.seat.project)
        assert project is not None, "start_seat checked the project"
        number = next(self._ids)
        settings = {
            "terminal": number,
            "cwd": str(state.directory),
            "shell": config.shell_for(project),
            **self._host_config,
        }
        host = msgspec.convert(settings, HostConfig)
        spec = TERMINAL.spec(f"terminal-{number}", config=msgspec.to_builtins(host))
        handle = self.manager.start(spec)
        terminal = _Terminal(TerminalRoom(number, state.seat), handle, key=("terminal", number))
        terminal.subscription = handle.subscribe(
            OUTPUT_STREAM, partial(self._on_frame, terminal), partial(self._on_end, terminal)
        )
        # Registered before the host answers: its first summary may come on the stream first.
        self._terminals[number] = terminal
        self._current[state.seat] = number
        try:
            summary = await self.ask(
                handle, Summary(), what="terminal_view", seat=state.seat, doing=_NOT_STARTED
            )
        except ClientRefusal:
            await self._discard(terminal)
            raise
        master = handle.borrow()  # lent before the host said hello, so it is here now
        if master is None:
            await self._discard(terminal)
            raise _refused(f"{_NOT_STARTED}: its host lent no PTY", state.seat)
        terminal.keys = PtyInput(master)
        log.info("terminal_opened", seat=str(state.seat), id=number, pid=summary.pid)
        self._publish(terminal, summary)
        return terminal

    async def _discard(self, terminal: _Terminal) -> None:
        """Forget a terminal that never started; its host's row and sockets go too."""
        seat = terminal.room.seat
        del self._terminals[terminal.room.id], self._current[seat]
        if terminal.subscription is not None:
            terminal.subscription.close()
        await self.manager.remove(terminal.handle.name)

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
            self._refresh_mute(terminal)
            self._refresh_pace(terminal)
        elif flow.paused:
            flow.paused = False
            await self._sync(terminal, viewer)

    async def _ack(self, connection: Connection, message: TerminalAck) -> None:
        terminal, viewer = self._attachment(connection, "terminal_ack")
        news = terminal.flow.viewers[connection].acked(message.seq)
        if news and viewer is terminal.room.controller:
            self._refresh_pace(terminal, parsed=message.seq)

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
        terminal = self._terminals.get(message.id)
        if terminal is None or terminal.room.seat != message.seat:
            raise ClientRefusal(
                "terminal_close",
                f"terminal {message.id} is not a terminal of seat {message.seat}",
                message.seat,
            )
        await self._close(terminal, notify=True)

    def _input(self, connection: Connection, frame: TerminalInput) -> None:
        terminal = self._attached.get(connection)
        viewer = terminal.room.viewers.get(connection) if terminal is not None else None
        if terminal is None or viewer is None or frame.terminal != terminal.room.id:
            log.debug("terminal_input_dropped", peer=connection.peer, id=frame.terminal)
            return
        if not terminal.room.may_type(viewer):
            log.debug("terminal_input_refused", peer=connection.peer, viewer=viewer.number)
            return
        self._type(terminal, frame.data)

    def _type(self, terminal: _Terminal, data: bytes) -> None:
        """Keystrokes to the shell, written by the supervisor itself: no hop through the host."""
        self._active(terminal)
        keys = terminal.keys
        if keys is not None and not keys.write(data) and not keys.closed:
            log.info(
                "terminal_input_full", id=terminal.room.id, bytes=len(data), waiting=keys.pending
            )

    # --- attachments -------------------------------------------------------------------

    def _attachment(
        self, connection: Connection, what: str, seat: Seat | None = None, id: int | None = None
    ) -> tuple[_Terminal, Viewer[Connection]]:
        """The connection's terminal and viewer, or a refusal naming `what` (O-TM2)."""
        terminal = self._attached.get(connection)
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
        terminal = self._attached.pop(connection, None)
        if terminal is None:
            return
        viewer, released = terminal.room.detach(connection)
        terminal.flow.detach(connection)
        if viewer is not None:
            log.info("terminal_detach", id=terminal.room.id, viewer=viewer.number)
        if released:
            self._tell_control(terminal)
        self._refresh_mute(terminal)
        terminal.tasks.spawn(self._apply_size(terminal))

    def _tell_control(self, terminal: _Terminal) -> None:
        terminal.control_moved.set()
        terminal.control_moved.clear()
        self._refresh_pace(terminal)
        room = terminal.room
        frame = server.JsonFrame.encode(
            wire.TerminalControl(seat=room.seat, id=room.id, controller=_number(room.controller))
        )
        for viewer in room.viewers.values():
            viewer.connection.send_frame(frame)

    async def _apply_size(self, terminal: _Terminal) -> None:
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

    # --- views and chunks --------------------------------------------------------------

    async def _sync(self, terminal: _Terminal, viewer: Viewer[Connection]) -> None:
        """Hold the viewer's chunks, send it a fresh view, then the chunks after its seq."""
        room = terminal.room
        flow = terminal.flow.viewers[viewer.connection]
        flow.asking_view()
        unmute = terminal.flow.mute()
        if unmute is not None:
            # Before the view: every frame after it comes.
            await self._tell_flow(terminal, _mute_flow(unmute))
        while True:
            flow.asking_view()
            view = await self.ask_or_log(
                terminal.handle, View(), "terminal_view_failed", id=room.id
            )
            if view is None:
                return
            if terminal.flow.viewers.get(viewer.connection) is not flow or flow.paused:
                return
            if not flow.held_lost:
                break
            await viewer.connection.writable()
        message = wire.TerminalView(
            seat=room.seat,
            id=room.id,
            cols=view.cols,
            rows=view.rows,
            seq=view.seq,
            screen=view.screen,
            viewers=len(room.viewers),
            viewer=viewer.number,
            controller=_number(room.controller),
        )
        viewer.connection.send(message)
        for chunk in flow.view_drawn(view.seq):
            self._send_chunk(terminal, viewer, chunk)
        if viewer is room.controller:  # what it had not parsed before the view no longer counts
            self._refresh_pace(terminal, parsed=flow.parsed)

    def _on_frame(self, terminal: _Terminal, frame: StreamFrame) -> None:
        if terminal.closing:
            return
        meta = read_output_meta(frame.meta)
        if not isinstance(meta, int):  # not `isinstance(meta, TerminalSummary)`: 5x dearer
            self._publish(terminal, meta)
            return
        self._active(terminal)
        chunk = bytes(frame.payload)
        flows = terminal.flow.viewers
        for viewer in list(terminal.room.viewers.values()):
            if flows[viewer.connection].route(meta, chunk) is SEND:
                self._send_chunk(terminal, viewer, chunk)
        controller = terminal.room.controller
        if controller is None:
            return
        if terminal.flow.throttle(controller.connection.stream_pending(terminal.key)):
            terminal.tasks.spawn(self._throttle(terminal, controller))

    def _active(self, terminal: _Terminal) -> None:
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

    def _send_chunk(self, terminal: _Terminal, viewer: Viewer[Connection], chunk: bytes) -> None:
        viewer.connection.send_bounded(
            terminal.key,
            chunk,
            limit=chunk_limit(controls=viewer is terminal.room.controller),
            on_overflow=partial(self._overflowed, terminal, viewer.connection),
        )

    def _overflowed(self, terminal: _Terminal, connection: Connection) -> None:
        """The viewer fell ~1 MiB behind: its waiting chunks are gone; draw it a fresh screen.

        The view is asked only once what was queued for it has been written, so a stalled
        viewer costs one bounded backlog, not a view per megabyte of output.
        """
        viewer = terminal.room.viewers.get(connection)
        flow = terminal.flow.viewers.get(connection)
        if viewer is None or flow is None:
            return
        log.info("terminal_viewer_overflow", id=terminal.room.id, viewer=viewer.number)
        if flow.overflowed():
            self._refresh_mute(terminal)
            self._refresh_pace(terminal)
            terminal.tasks.spawn(self._resync(terminal, viewer, flow))

    async def _resync(
        self, terminal: _Terminal, viewer: Viewer[Connection], flow: ViewerFlow
    ) -> None:
        await viewer.connection.writable()
        flow.drained()
        await self._sync(terminal, viewer)

    def _refresh_mute(self, terminal: _Terminal) -> None:
        """Tell the host whether any viewer takes frames live, if that changed (a paused or
        overflowed viewer takes none: a phone asleep during a build costs nothing)."""
        decision = terminal.flow.mute()
        if decision is not None:
            terminal.tasks.spawn(self._tell_flow(terminal, _mute_flow(decision)))

    def _refresh_pace(self, terminal: _Terminal, parsed: int | None = None) -> None:
        """Tell the host whether the controller's page paces the shell, if that changed (it
        acks and takes frames live), else the seq it has parsed up to when there is news."""
        controller = terminal.room.controller
        flow = terminal.flow.viewers.get(controller.connection) if controller else None
        decision = terminal.flow.pace(flow)
        if decision is not None:
            told = Flow(paced=decision.paced, pace_epoch=decision.epoch, parsed=decision.parsed)
        elif parsed is not None and terminal.flow.paced:
            told = Flow(parsed=parsed)
        else:
            return
        terminal.tasks.spawn(self._tell_flow(terminal, told))

    async def _throttle(self, terminal: _Terminal, controller: Viewer[Connection]) -> None:
        """Stop the PTY until the controller's backlog is under FLOW_LOW, or control moves."""
        drained = asyncio.ensure_future(controller.connection.writable(FLOW_LOW))
        moved = asyncio.ensure_future(terminal.control_moved.wait())
        try:
            if await self._tell_flow(terminal, Flow(paused=True)):
                await asyncio.wait([drained, moved], return_when=asyncio.FIRST_COMPLETED)
                await self._tell_flow(terminal, Flow(paused=False))
        finally:
            drained.cancel()
            moved.cancel()
            terminal.flow.throttle_ended()

    async def _tell_flow(self, terminal: _Terminal, decision: Flow) -> bool:
        return await self.tell(
            terminal.handle, decision, "terminal_flow_failed", id=terminal.room.id
        )

    def _on_end(self, terminal: _Terminal, stream_id: str, reason: str) -> None:
        """The host is gone without a close: viewers are told, the seat shows it dead."""
        if terminal.closing:
            return
        terminal.gone = reason
        terminal.flow.stopped = True
        if terminal.keys is not None:
            terminal.keys.close()  # the shell must see its PTY hang up with its host
        room = terminal.room
        log.warning("terminal_host_gone", id=room.id, reason=reason)
        if terminal.summary is not None:
            self._publish(terminal, terminal.summary.host_gone(reason))
        lost = wire.host_stopped(room.seat, room.id, reason)
        for connection in list(room.viewers):
            connection.send(lost)
            self._attached.pop(connection, None)
        room.viewers.clear()
        terminal.flow.viewers.clear()
        room.controller = None
        terminal.tasks.spawn(terminal.handle.stop())

    async def _close(self, terminal: _Terminal, *, notify: bool) -> None:
        """Kill the shell's session, stop the host, detach every viewer (O-TM10)."""
        if terminal.closing:
            await terminal.closed.wait()
            return
        try:
            await self._close_once(terminal, notify=notify)
        finally:
            terminal.closed.set()

    async def _close_once(self, terminal: _Terminal, *, notify: bool) -> None:
        terminal.closing = True
        terminal.flow.stopped = True
        room = terminal.room
        if terminal.gone is None:
            await self.tell(terminal.handle, Close(), "terminal_close_failed", id=room.id)
        if terminal.subscription is not None:
            terminal.subscription.close()
        if terminal.keys is not None:
            terminal.keys.close()
        # remove, not stop: a closed terminal's host leaves home's `workers` and the manager.
        await self.manager.remove(terminal.handle.name)
        terminal.tasks.cancel()
        closed = wire.closed(room.seat, room.id)
        for connection in list(room.viewers):
            if notify:
                connection.send(closed)
            self._attached.pop(connection, None)
        room.viewers.clear()
        terminal.flow.viewers.clear()
        self._terminals.pop(room.id, None)
        log.info("terminal_closed", seat=str(room.seat), id=room.id)
        if self._current.get(room.seat) == room.id:
            del self._current[room.seat]
            state = self.supervisor.seats.get(room.seat)
            if state is not None:
                state.terminal = None
                self.supervisor.publish_seat_update(
                    room.seat, "terminal_changed", wire.terminal_changed(room.seat, None)
                )

    def _publish(self, terminal: _Terminal, summary: wire.TerminalSummary) -> None:
        """Publish the seat's `terminal_changed` when its summary really changed (TM13)."""
        if summary == terminal.summary:
            return
        terminal.summary = summary
        room = terminal.room
        room.size = (summary.cols, summary.rows)
        if self._current.get(room.seat) != room.id:
            return
        state = self.supervisor.seats.get(room.seat)
        if state is not None:
            state.terminal = msgspec.to_builtins(summary)
            self.supervisor.publish_seat_update(
                room.seat, "terminal_changed", wire.terminal_changed(room.seat, summary)
            )


_NOT_STARTED = "the terminal could not start"


def _refused(why: str, seat: Seat) -> ClientRefusal:
    """A view that cannot be served; answered as a `Refused` reply body or an error frame."""
    return ClientRefusal("terminal_view", why, seat)


def _alive(summary: wire.TerminalSummary | None) -> bool:
    return summary is not None and summary.alive


def _mute_flow(decision: Mute) -> Flow:
    return Flow(muted=decision.muted, epoch=decision.epoch)


def _number(viewer: Viewer[Connection] | None) -> int | None:
    return viewer.number if viewer is not None else None


def install(
    supervisor: Supervisor, manager: WorkerManager, *, host_config: Mapping[str, Any] | None = None
) -> TerminalService:
    """Serve the terminal verbs on `supervisor` with hosts started by `manager`."""
    service = TerminalService(supervisor, manager, host_config=host_config)
    service.install()
    return service
