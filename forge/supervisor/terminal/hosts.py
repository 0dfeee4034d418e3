"""One terminal's life: opened with its own host, its summary published, gone, closed (O-TM10).

Terminal ids count from 1 and are never reused in a run. A seat has one current terminal: what
an id-less `terminal_view` opens (a new one when it has none, or when its shell died) and what
the session's `terminal` shows, published as `terminal_changed` when its summary really changes
(TM13). A host that ends without a close leaves the terminal `gone`: its viewers are told, and
the seat shows it dead until a view opens another.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

import msgspec

from forge.ipc.manager import WorkerHandle
from forge.ipc.streams import Subscription
from forge.logs import get_logger
from forge.ptyinput import PtyInput
from forge.supervisor.service import TaskSet
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.seats import SeatState, UnknownProject
from forge.supervisor.terminal.flow import TerminalFlow
from forge.supervisor.terminal.room import TerminalRoom
from forge.wire import terminal as wire
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat
from forge.workers.terminal.protocol import OUTPUT_STREAM, TERMINAL, Close, HostConfig, Summary

if TYPE_CHECKING:
    from forge.supervisor.terminal.service import TerminalService

log = get_logger(__name__)

NOT_STARTED = "the terminal could not start"


@dataclass(eq=False)
class Terminal:
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
    """Set once `close` has finished: a second close waits for the first, never repeats it."""
    control_moved: asyncio.Event = field(default_factory=asyncio.Event)
    """Set on each change of controller, so a throttle held for the old one ends."""
    key: tuple[str, int] = ("terminal", 0)
    """The connections' stream key for this terminal's chunks."""
    tasks: TaskSet = field(default_factory=lambda: TaskSet("terminal"))
    """Work for this terminal only (a resize, a resync, a flow message): cancelled at its close."""


class TerminalHosts:
    """Every terminal of the run and each seat's current one."""

    def __init__(self, service: TerminalService) -> None:
        self._service = service
        self.terminals: dict[int, Terminal] = {}
        self.current: dict[Seat, int] = {}
        """The seat's terminal: what an id-less view opens and the session's `terminal` shows."""
        self._opening: defaultdict[Seat, asyncio.Lock] = defaultdict(asyncio.Lock)
        """Id-less views of one seat, one at a time: two viewers arriving together (a phone and
        a desktop, or both after a host crash) share one new shell instead of each closing the
        other's while it starts."""
        self._ids = itertools.count(1)

    def of_seat(self, seat: Seat) -> Terminal | None:
        return self.terminals.get(self.current.get(seat, 0))

    async def to_view(self, seat: Seat, wanted: int | None) -> Terminal:
        """Terminal `wanted` of the seat, else its current one, opened if it has none alive."""
        try:
            state = await self._service.supervisor.start_seat(seat)
        except UnknownProject as error:
            raise refused(str(error), seat) from None
        if wanted is not None:
            terminal = self.terminals.get(wanted)
            if terminal is None or terminal.room.seat != seat:
                raise refused(f"terminal {wanted} is not a terminal of seat {seat}", seat)
            if terminal.gone is not None:
                why = f"terminal {wanted} is gone ({terminal.gone}); open a new one"
                raise refused(why, seat)
            return terminal
        async with self._opening[seat]:
            current = self.of_seat(seat)
            if current is not None and current.gone is None and _alive(current.summary):
                return current
            if current is not None:
                await self.close(current, notify=True)
            return await self._open(state)

    async def _open(self, state: SeatState) -> Terminal:
        service = self._service
        config = service.supervisor.loaded.config
        project = config.project(state.seat.org, state.seat.project)
        assert project is not None, "start_seat checked the project"
        number = next(self._ids)
        settings = {
            "terminal": number,
            "cwd": str(state.directory),
            "shell": config.shell_for(project),
            **service.host_config,
        }
        host = msgspec.convert(settings, HostConfig)
        spec = TERMINAL.spec(f"terminal-{number}", config=msgspec.to_builtins(host))
        handle = service.manager.start(spec)
        terminal = Terminal(TerminalRoom(number, state.seat), handle, key=("terminal", number))
        terminal.subscription = handle.subscribe(
            OUTPUT_STREAM, partial(service.relay.on_frame, terminal), partial(self._ended, terminal)
        )
        # Registered before the host answers: its first summary may come on the stream first.
        self.terminals[number] = terminal
        self.current[state.seat] = number
        try:
            summary = await service.ask(
                handle, Summary(), what="terminal_view", seat=state.seat, doing=NOT_STARTED
            )
        except ClientRefusal:
            await self._discard(terminal)
            raise
        master = handle.borrow()  # lent before the host said hello, so it is here now
        if master is None:
            await self._discard(terminal)
            raise refused(f"{NOT_STARTED}: its host lent no PTY", state.seat)
        terminal.keys = PtyInput(master)
        log.info("terminal_opened", seat=str(state.seat), id=number, pid=summary.pid)
        self.publish(terminal, summary)
        return terminal

    async def _discard(self, terminal: Terminal) -> None:
        """Forget a terminal that never started; its host's row and sockets go too."""
        seat = terminal.room.seat
        del self.terminals[terminal.room.id], self.current[seat]
        if terminal.subscription is not None:
            terminal.subscription.close()
        await self._service.manager.remove(terminal.handle.name)

    def _ended(self, terminal: Terminal, stream_id: str, reason: str) -> None:
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
            self.publish(terminal, terminal.summary.host_gone(reason))
        lost = wire.host_stopped(room.seat, room.id, reason)
        for connection in list(room.viewers):
            connection.send(lost)
            self._service.attached.pop(connection, None)
        room.viewers.clear()
        terminal.flow.viewers.clear()
        room.controller = None
        terminal.tasks.spawn(terminal.handle.stop())

    async def close(self, terminal: Terminal, *, notify: bool) -> None:
        """Kill the shell's session, stop the host, detach every viewer (O-TM10)."""
        if terminal.closing:
            await terminal.closed.wait()
            return
        try:
            await self._close_once(terminal, notify=notify)
        finally:
            terminal.closed.set()

    async def _close_once(self, terminal: Terminal, *, notify: bool) -> None:
        service = self._service
        terminal.closing = True
        terminal.flow.stopped = True
        room = terminal.room
        if terminal.gone is None:
            await service.tell(terminal.handle, Close(), "terminal_close_failed", id=room.id)
        if terminal.subscription is not None:
            terminal.subscription.close()
        if terminal.keys is not None:
            terminal.keys.close()
        # remove, not stop: a closed terminal's host leaves home's `workers` and the manager.
        await service.manager.remove(terminal.handle.name)
        terminal.tasks.cancel()
        closed = wire.closed(room.seat, room.id)
        for connection in list(room.viewers):
            if notify:
                connection.send(closed)
            service.attached.pop(connection, None)
        room.viewers.clear()
        terminal.flow.viewers.clear()
        self.terminals.pop(room.id, None)
        log.info("terminal_closed", seat=str(room.seat), id=room.id)
        if self.current.get(room.seat) == room.id:
            del self.current[room.seat]
            state = service.supervisor.seats.get(room.seat)
            if state is not None:
                state.terminal = None
                service.supervisor.publish_seat_update(
                    room.seat, "terminal_changed", wire.terminal_changed(room.seat, None)
                )

    def publish(self, terminal: Terminal, summary: wire.TerminalSummary) -> None:
        """Publish the seat's `terminal_changed` when its summary really changed (TM13)."""
        if summary == terminal.summary:
            return
        terminal.summary = summary
        room = terminal.room
        room.size = (summary.cols, summary.rows)
        if self.current.get(room.seat) != room.id:
            return
        supervisor = self._service.supervisor
        state = supervisor.seats.get(room.seat)
        if state is not None:
            state.terminal = msgspec.to_builtins(summary)
            supervisor.publish_seat_update(
                room.seat, "terminal_changed", wire.terminal_changed(room.seat, summary)
            )


def refused(why: str, seat: Seat) -> ClientRefusal:
    """A view that cannot be served; answered as a `Refused` reply body or an error frame."""
    return ClientRefusal("terminal_view", why, seat)


def _alive(summary: wire.TerminalSummary | None) -> bool:
    return summary is not None and summary.alive
