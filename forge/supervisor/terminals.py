"""The terminal verbs on the socket, served by one terminal host worker per terminal.

`TerminalService.install` registers `terminal_view`, `terminal_detach`, `terminal_resize`,
`terminal_pause`, `terminal_control`, `terminal_close` and kind-5 input on the `Supervisor`.
The hosts do the PTY work; this module owns what clients are told: terminal ids (from 1, never
reused in a run), viewers and control (`TerminalRoom`), each viewer's flow, and the seat's
`terminal` summary published as `terminal_changed`.

Flow per viewer: chunks are relayed as the host framed them (one bytes object for every
viewer). A watcher's backlog is bounded (~1 MiB): past it the connection drops the waiting
chunks and the viewer gets a fresh view at the current seq, then continues live. Only the
controller slows the shell: past `FLOW_HIGH` unsent bytes its host stops reading the PTY until
the backlog is under `FLOW_LOW`. A view is asked of the host while the viewer's chunks are held,
so the client sees the view, then exactly the chunks after its seq.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from forge.errors import UserError
from forge.ipc.errors import RequestFailed, WorkerError
from forge.ipc.manager import WorkerHandle, WorkerManager, WorkerSpec
from forge.ipc.messages import StreamFrame
from forge.ipc.streams import Subscription
from forge.logs import get_logger
from forge.supervisor.connection import Connection
from forge.supervisor.core import Supervisor
from forge.supervisor.outbound import TERMINAL_LIMIT
from forge.supervisor.seats import SeatState, UnknownProject
from forge.supervisor.terminal_room import TerminalRoom, Viewer
from forge.wire import server
from forge.wire.binary import TERMINAL_OUTPUT_HEADER, TerminalInput
from forge.wire.client import (
    ReplyTo,
    TerminalClose,
    TerminalControl,
    TerminalDetach,
    TerminalPause,
    TerminalResize,
    TerminalView,
)
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat
from forge.workers.terminal.host import COLS_RANGE, INPUT_STREAM, OUTPUT_STREAM, ROWS_RANGE

log = get_logger(__name__)

HOST_MODULE = "forge.workers.terminal"
CONTROLLER_LIMIT = 16 * 1024 * 1024
"""The controller's chunk backlog bound: backpressure (not a drop) must govern the controller,
and after `FLOW_HIGH` is crossed up to ~9 MiB more can still arrive before the host's PTY stops
(the ZeroMQ bulk pipe holds 128 frames of up to 64 KiB, plus the host's 1 MiB send queue)."""
FLOW_HIGH = 1024 * 1024
FLOW_LOW = 256 * 1024
"""The controller's unsent bytes above which its host stops reading the PTY, and below which it
reads again."""
HELD_LIMIT = TERMINAL_LIMIT
"""Chunks held for a viewer waiting on its view; past this the view is asked again."""


class TerminalHeld(UserError):
    """A person holds the terminal's control: the agent's terminal tools are refused (TM10)."""


@dataclass(eq=False)
class _Terminal:
    """One terminal: its room, its host, and the last summary published."""

    room: TerminalRoom[Connection]
    handle: WorkerHandle
    summary: dict[str, Any]
    subscription: Subscription | None = None
    gone: str | None = None
    """Why the host is gone (it crashed): no view can be drawn any more."""
    closing: bool = False
    throttled: bool = False
    muted: bool = False
    """The host was last told that no viewer takes frames live (so it sends none)."""
    mute_epoch: int = 0
    """Numbers the mute decisions, so the host applies only the latest one."""
    control_moved: asyncio.Event = field(default_factory=asyncio.Event)
    """Set on each change of controller, so a throttle held for the old one ends."""
    key: tuple[str, int] = ("terminal", 0)
    """The connections' stream key for this terminal's chunks."""
    tasks: set[asyncio.Task[None]] = field(default_factory=set)


class TerminalService:
    """Serves the terminal verbs; `host_config` adds settings to every host (tests: `argv`)."""

    def __init__(
        self,
        supervisor: Supervisor,
        manager: WorkerManager,
        *,
        host_config: Mapping[str, Any] | None = None,
    ) -> None:
        self._supervisor = supervisor
        self._manager = manager
        self._host_config = dict(host_config or {})
        self._terminals: dict[int, _Terminal] = {}
        self._current: dict[Seat, int] = {}
        """The seat's terminal: what an id-less view opens and the session's `terminal` shows."""
        self._attached: dict[Connection, _Terminal] = {}
        self._ids = itertools.count(1)
        self._viewer_numbers = itertools.count(1)

    def install(self) -> None:
        supervisor = self._supervisor
        supervisor.register_verb(TerminalView, self._view)
        supervisor.register_verb(TerminalDetach, self._detach_verb)
        supervisor.register_verb(TerminalResize, self._resize)
        supervisor.register_verb(TerminalPause, self._pause)
        supervisor.register_verb(TerminalControl, self._control)
        supervisor.register_verb(TerminalClose, self._close_verb)
        supervisor.register_binary(TerminalInput, self._input)
        supervisor.on_disconnect(self._detach)
        supervisor.on_shutdown(self.close_all)

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
        terminal.handle.send_bulk(INPUT_STREAM, data)

    def shell_pids(self, seat: Seat) -> list[int]:
        """The pids of the seat's live shells: the roots of its process view (H12)."""
        return sorted(
            int(terminal.summary["pid"])
            for terminal in self._terminals.values()
            if terminal.room.seat == seat
            and terminal.gone is None
            and terminal.summary.get("alive")
            and terminal.summary.get("pid")
        )

    async def close_all(self) -> None:
        for terminal in list(self._terminals.values()):
            await self._close(terminal, notify=False)

    # --- verbs -------------------------------------------------------------------------

    async def _view(self, connection: Connection, message: TerminalView) -> None:
        seat = message.seat
        try:
            terminal = await self._terminal_to_view(seat, message.id)
        except _Refused as refusal:
            if message.reply_to is None:
                raise ClientRefusal("terminal_view", refusal.why, seat) from None
            connection.send(server.reply(message.reply_to, {"ok": False, "why": refusal.why}))
            return
        self._detach(connection)
        viewer = terminal.room.attach(connection, next(self._viewer_numbers))
        self._attached[connection] = terminal
        log.info("terminal_attach", seat=str(seat), id=terminal.room.id, viewer=viewer.number)
        _reply(connection, message.reply_to, {"ok": True, "id": terminal.room.id})
        await self._sync(terminal, viewer)

    async def _terminal_to_view(self, seat: Seat, wanted: int | None) -> _Terminal:
        try:
            state = await self._supervisor.start_seat(seat)
        except UnknownProject as error:
            raise _Refused(str(error)) from None
        if wanted is not None:
            terminal = self._terminals.get(wanted)
            if terminal is None or terminal.room.seat != seat:
                raise _Refused(f"terminal {wanted} is not a terminal of seat {seat}")
            if terminal.gone is not None:
                raise _Refused(f"terminal {wanted} is gone ({terminal.gone}); open a new one")
            return terminal
        current = self._terminals.get(self._current.get(seat, 0))
        if current is not None and current.gone is None and current.summary.get("alive"):
            return current
        if current is not None:
            await self._close(current, notify=True)
        return await self._open(state)

    async def _open(self, state: SeatState) -> _Terminal:
        config = self._supervisor.loaded.config
        project = config.project(state.seat.org, state.seat.project)
        assert project is not None, "start_seat checked the project"
        number = next(self._ids)
        settings = {
            "terminal": number,
            "cwd": str(state.directory),
            "shell": config.shell_for(project),
            **self._host_config,
        }
        spec = WorkerSpec(
            f"terminal-{number}", "terminal", HOST_MODULE, config=settings, restart=False
        )
        handle = self._manager.start(spec)
        terminal = _Terminal(TerminalRoom(number, state.seat), handle, {}, key=("terminal", number))
        terminal.subscription = handle.subscribe(
            OUTPUT_STREAM, partial(self._on_frame, terminal), partial(self._on_end, terminal)
        )
        # Registered before the host answers: its first summary may come on the stream first.
        self._terminals[number] = terminal
        self._current[state.seat] = number
        try:
            summary = (await handle.request("summary")).result
        except (WorkerError, RequestFailed) as error:
            del self._terminals[number], self._current[state.seat]
            terminal.subscription.close()
            await handle.stop()
            raise _Refused(f"the terminal could not start: {error}") from None
        log.info("terminal_opened", seat=str(state.seat), id=number, pid=summary.get("pid"))
        self._publish(terminal, summary)
        return terminal

    async def _detach_verb(self, connection: Connection, message: TerminalDetach) -> None:
        self._detach(connection)

    async def _resize(self, connection: Connection, message: TerminalResize) -> None:
        terminal, viewer = self._attachment(connection, "terminal_resize", message.seat, message.id)
        if message.cols not in COLS_RANGE or message.rows not in ROWS_RANGE:
            raise ClientRefusal(
                "terminal_resize",
                f"a terminal is 2..500 columns by 1..300 rows, not {message.cols}x{message.rows}",
                message.seat,
            )
        viewer.size = (message.cols, message.rows)
        await self._apply_size(terminal)

    async def _pause(self, connection: Connection, message: TerminalPause) -> None:
        terminal, viewer = self._attachment(connection, "terminal_pause")
        if message.paused:
            viewer.paused = True
            self._refresh_mute(terminal)
        elif viewer.paused:
            viewer.paused = False
            await self._sync(terminal, viewer)

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

    async def _input(self, connection: Connection, frame: TerminalInput) -> None:
        terminal = self._attached.get(connection)
        viewer = terminal.room.viewers.get(connection) if terminal is not None else None
        if terminal is None or viewer is None or frame.terminal != terminal.room.id:
            log.debug("terminal_input_dropped", peer=connection.peer, id=frame.terminal)
            return
        if not terminal.room.may_type(viewer):
            log.debug("terminal_input_refused", peer=connection.peer, viewer=viewer.number)
            return
        terminal.handle.send_bulk(INPUT_STREAM, frame.data)

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
        if viewer is not None:
            log.info("terminal_detach", id=terminal.room.id, viewer=viewer.number)
        if released:
            self._tell_control(terminal)
        self._refresh_mute(terminal)
        self._spawn(terminal, self._apply_size(terminal))

    def _tell_control(self, terminal: _Terminal) -> None:
        terminal.control_moved.set()
        terminal.control_moved.clear()
        room = terminal.room
        controller = room.controller.number if room.controller is not None else None
        message = {"kind": "terminal_control", "seat": room.seat, "id": room.id}
        message["controller"] = controller
        for viewer in room.viewers.values():
            viewer.connection.send(message)

    async def _apply_size(self, terminal: _Terminal) -> None:
        """Resize the PTY to the size the rule picks, unless it is already in place."""
        room = terminal.room
        wanted = room.wanted_size()
        if wanted is None or wanted == room.size or terminal.gone is not None:
            return
        room.size = wanted
        cols, rows = wanted
        try:
            await terminal.handle.request("resize", {"cols": cols, "rows": rows})
        except (WorkerError, RequestFailed) as error:
            log.warning("terminal_resize_failed", id=room.id, reason=str(error))

    # --- views and chunks --------------------------------------------------------------

    async def _sync(self, terminal: _Terminal, viewer: Viewer[Connection]) -> None:
        """Hold the viewer's chunks, send it a fresh view, then the chunks after its seq."""
        viewer.syncing = True
        room = terminal.room
        unmuting = self._mute_decision(terminal)
        if unmuting is not None:
            await unmuting  # before the view, so every frame after its seq is sent
        while True:
            viewer.held_lost = False
            try:
                view = (await terminal.handle.request("view")).result
            except (WorkerError, RequestFailed) as error:
                log.warning("terminal_view_failed", id=room.id, reason=str(error))
                return
            if room.viewers.get(viewer.connection) is not viewer or viewer.paused:
                return
            if not viewer.held_lost:
                break
            await viewer.connection.writable()
        viewer.connection.send(
            {
                "kind": "terminal_view",
                "seat": room.seat,
                "id": room.id,
                "cols": view["cols"],
                "rows": view["rows"],
                "seq": view["seq"],
                "screen": view["screen"],
                "viewers": len(room.viewers),
                "viewer": viewer.number,
                "controller": room.controller.number if room.controller is not None else None,
            }
        )
        viewer.syncing = False
        held, viewer.held, viewer.held_bytes = viewer.held, [], 0
        for seq, chunk in held:
            if seq > view["seq"]:
                self._send_chunk(terminal, viewer, chunk)

    def _on_frame(self, terminal: _Terminal, frame: StreamFrame) -> None:
        if terminal.closing:
            return
        if frame.meta is not None:
            summary = frame.meta.get("summary") if isinstance(frame.meta, dict) else None
            if isinstance(summary, dict):
                self._publish(terminal, summary)
            return
        chunk = bytes(frame.payload)
        _, _, seq = TERMINAL_OUTPUT_HEADER.unpack_from(chunk)
        for viewer in list(terminal.room.viewers.values()):
            if viewer.paused or viewer.stale:
                continue
            if viewer.syncing:
                if viewer.held_bytes + len(chunk) > HELD_LIMIT:
                    viewer.held, viewer.held_bytes, viewer.held_lost = [], 0, True
                else:
                    viewer.held.append((seq, chunk))
                    viewer.held_bytes += len(chunk)
                continue
            self._send_chunk(terminal, viewer, chunk)
        self._check_flow(terminal)

    def _send_chunk(self, terminal: _Terminal, viewer: Viewer[Connection], chunk: bytes) -> None:
        controls = viewer is terminal.room.controller
        viewer.connection.send_bounded(
            terminal.key,
            chunk,
            limit=CONTROLLER_LIMIT if controls else TERMINAL_LIMIT,
            on_overflow=partial(self._overflowed, terminal, viewer),
        )

    def _overflowed(self, terminal: _Terminal, viewer: Viewer[Connection]) -> None:
        """The viewer fell ~1 MiB behind: its waiting chunks are gone; draw it a fresh screen.

        The view is asked only once what was queued for it has been written, so a stalled
        viewer costs one bounded backlog, not a view per megabyte of output.
        """
        log.info("terminal_viewer_overflow", id=terminal.room.id, viewer=viewer.number)
        if not viewer.stale:
            viewer.stale = True
            self._refresh_mute(terminal)
            self._spawn(terminal, self._resync(terminal, viewer))

    async def _resync(self, terminal: _Terminal, viewer: Viewer[Connection]) -> None:
        await viewer.connection.writable()
        viewer.stale = False
        await self._sync(terminal, viewer)

    def _refresh_mute(self, terminal: _Terminal) -> None:
        decision = self._mute_decision(terminal)
        if decision is not None:
            self._spawn(terminal, decision)

    def _mute_decision(self, terminal: _Terminal) -> Coroutine[Any, Any, None] | None:
        """The request telling the host whether any viewer takes frames live, if that changed.

        A paused or overflowed viewer takes none, so with nobody else watching the host stops
        sending them: a phone asleep during a build costs the supervisor nothing. The decision
        is numbered here, when it is made, because the requests may reach the host out of order.
        """
        live = any(not v.paused and not v.stale for v in terminal.room.viewers.values())
        if live != terminal.muted or terminal.gone is not None or terminal.closing:
            return None
        terminal.muted = not live
        terminal.mute_epoch += 1
        return self._send_mute(terminal, terminal.muted, terminal.mute_epoch)

    async def _send_mute(self, terminal: _Terminal, muted: bool, epoch: int) -> None:
        try:
            await terminal.handle.request("flow", {"muted": muted, "epoch": epoch})
        except (WorkerError, RequestFailed) as error:
            log.warning("terminal_flow_failed", id=terminal.room.id, reason=str(error))

    def _check_flow(self, terminal: _Terminal) -> None:
        controller = terminal.room.controller
        if terminal.throttled or controller is None:
            return
        if controller.connection.stream_pending(terminal.key) >= FLOW_HIGH:
            terminal.throttled = True
            self._spawn(terminal, self._throttle(terminal, controller))

    async def _throttle(self, terminal: _Terminal, controller: Viewer[Connection]) -> None:
        """Stop the PTY until the controller's backlog is under FLOW_LOW or control moves."""
        handle = terminal.handle
        drained = asyncio.ensure_future(controller.connection.writable(FLOW_LOW))
        moved = asyncio.ensure_future(terminal.control_moved.wait())
        try:
            await handle.request("flow", {"paused": True})
            await asyncio.wait([drained, moved], return_when=asyncio.FIRST_COMPLETED)
            await handle.request("flow", {"paused": False})
        except (WorkerError, RequestFailed) as error:
            log.warning("terminal_flow_failed", id=terminal.room.id, reason=str(error))
        finally:
            drained.cancel()
            moved.cancel()
            terminal.throttled = False

    def _on_end(self, terminal: _Terminal, stream_id: str, reason: str) -> None:
        """The host is gone without a close: viewers are told, the seat shows it dead."""
        if terminal.closing:
            return
        terminal.gone = reason
        room = terminal.room
        log.warning("terminal_host_gone", id=room.id, reason=reason)
        self._publish(
            terminal,
            {**terminal.summary, "alive": False, "state": "exited", "reason": reason},
        )
        why = f"terminal {room.id}'s host stopped ({reason}); a new view opens a fresh shell"
        for connection in list(room.viewers):
            connection.send(server.error("terminal_view", why, room.seat))
            self._attached.pop(connection, None)
        room.viewers.clear()
        room.controller = None
        self._spawn(terminal, terminal.handle.stop())

    async def _close(self, terminal: _Terminal, *, notify: bool) -> None:
        """Kill the shell's session, stop the host, detach every viewer (O-TM10)."""
        terminal.closing = True
        room = terminal.room
        if terminal.gone is None:
            try:
                await terminal.handle.request("close")
            except (WorkerError, RequestFailed) as error:
                log.warning("terminal_close_failed", id=room.id, reason=str(error))
        if terminal.subscription is not None:
            terminal.subscription.close()
        # remove, not stop: a closed terminal's host leaves home's `workers` and the manager.
        await self._manager.remove(terminal.handle.name)
        for task in list(terminal.tasks):
            task.cancel()
        why = f"terminal {room.id} closed"
        for connection in list(room.viewers):
            if notify:
                connection.send(server.error("terminal_close", why, room.seat))
            self._attached.pop(connection, None)
        room.viewers.clear()
        self._terminals.pop(room.id, None)
        log.info("terminal_closed", seat=str(room.seat), id=room.id)
        if self._current.get(room.seat) == room.id:
            del self._current[room.seat]
            state = self._supervisor.seats.get(room.seat)
            if state is not None:
                state.terminal = None
                self._supervisor.publish_seat_update(
                    room.seat, "terminal_changed", {"key": room.seat, "terminal": None}
                )

    def _publish(self, terminal: _Terminal, summary: dict[str, Any]) -> None:
        """Publish the seat's `terminal_changed` when its summary really changed (TM13)."""
        if summary == terminal.summary:
            return
        terminal.summary = summary
        room = terminal.room
        room.size = (int(summary.get("cols", room.size[0])), int(summary.get("rows", room.size[1])))
        if self._current.get(room.seat) != room.id:
            return
        state = self._supervisor.seats.get(room.seat)
        if state is not None:
            state.terminal = summary
            self._supervisor.publish_seat_update(
                room.seat, "terminal_changed", {"key": room.seat, "terminal": summary}
            )

    def _spawn(self, terminal: _Terminal, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        terminal.tasks.add(task)
        task.add_done_callback(terminal.tasks.discard)


class _Refused(Exception):
    """A view that cannot be served; answered as `{"ok": false, "why"}` or an error frame."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _reply(connection: Connection, reply_to: ReplyTo | None, body: dict[str, Any]) -> None:
    if reply_to is not None:
        connection.send(server.reply(reply_to, body))


def install(
    supervisor: Supervisor, manager: WorkerManager, *, host_config: Mapping[str, Any] | None = None
) -> TerminalService:
    """Serve the terminal verbs on `supervisor` with hosts started by `manager`."""
    service = TerminalService(supervisor, manager, host_config=host_config)
    service.install()
    return service
