"""A terminal's output to its viewers: views, chunks, and what the host is told of the flow.

Chunks are relayed as the host framed them (one bytes object for every viewer); every flow
decision (per-viewer bounds and resyncs, the controller's throttle, muting the host, held
chunks) is `flow`'s, and its docstring says how they fit together. Here they meet the sockets:
a viewer is drawn a fresh view (`sync`) when it attaches, resumes, or falls ~1 MiB behind; the
host hears whether anyone takes frames live (mute), whether the controller's page paces the
shell, and when the controller's backlog stops the PTY (throttle).
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import TYPE_CHECKING

from forge.ipc.messages import StreamFrame
from forge.logs import get_logger
from forge.supervisor.socket.connection import Connection
from forge.supervisor.terminal.flow import FLOW_LOW, SEND, Mute, ViewerFlow, chunk_limit
from forge.supervisor.terminal.hosts import Terminal
from forge.supervisor.terminal.room import Viewer, number_of
from forge.wire import terminal as wire
from forge.workers.terminal.protocol import Flow, View, read_output_meta

if TYPE_CHECKING:
    from forge.supervisor.terminal.service import TerminalService

log = get_logger(__name__)


class Relay:
    """What each viewer of a terminal is sent, and what its host is told of the viewers."""

    def __init__(self, service: TerminalService) -> None:
        self._service = service

    async def sync(self, terminal: Terminal, viewer: Viewer[Connection]) -> None:
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
            view = await self._service.ask_or_log(
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
            controller=number_of(room.controller),
        )
        viewer.connection.send(message)
        for chunk in flow.view_drawn(view.seq):
            self._send_chunk(terminal, viewer, chunk)
        if viewer is room.controller:  # what it had not parsed before the view no longer counts
            self.refresh_pace(terminal, parsed=flow.parsed)

    def on_frame(self, terminal: Terminal, frame: StreamFrame) -> None:
        if terminal.closing:
            return
        meta = read_output_meta(frame.meta)
        if not isinstance(meta, int):  # not `isinstance(meta, TerminalSummary)`: 5x dearer
            self._service.hosts.publish(terminal, meta)
            return
        self._service.active(terminal)
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

    def _send_chunk(self, terminal: Terminal, viewer: Viewer[Connection], chunk: bytes) -> None:
        viewer.connection.send_bounded(
            terminal.key,
            chunk,
            limit=chunk_limit(controls=viewer is terminal.room.controller),
            on_overflow=partial(self._overflowed, terminal, viewer.connection),
        )

    def _overflowed(self, terminal: Terminal, connection: Connection) -> None:
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
            self.refresh_mute(terminal)
            self.refresh_pace(terminal)
            terminal.tasks.spawn(self._resync(terminal, viewer, flow))

    async def _resync(
        self, terminal: Terminal, viewer: Viewer[Connection], flow: ViewerFlow
    ) -> None:
        await viewer.connection.writable()
        flow.drained()
        await self.sync(terminal, viewer)

    def refresh_mute(self, terminal: Terminal) -> None:
        """Tell the host whether any viewer takes frames live, if that changed (a paused or
        overflowed viewer takes none: a phone asleep during a build costs nothing)."""
        decision = terminal.flow.mute()
        if decision is not None:
            terminal.tasks.spawn(self._tell_flow(terminal, _mute_flow(decision)))

    def refresh_pace(self, terminal: Terminal, parsed: int | None = None) -> None:
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

    async def _throttle(self, terminal: Terminal, controller: Viewer[Connection]) -> None:
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

    async def _tell_flow(self, terminal: Terminal, decision: Flow) -> bool:
        return await self._service.tell(
            terminal.handle, decision, "terminal_flow_failed", id=terminal.room.id
        )


def _mute_flow(decision: Mute) -> Flow:
    return Flow(muted=decision.muted, epoch=decision.epoch)
