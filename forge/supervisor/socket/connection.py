"""One client connection: its inbox, outbound backlog, writer and monitor, and per-client state.

Four tasks serve a connection; the first to end ends the others, then ONE teardown runs
(`Connection.serve`). The reader takes frames off the socket, answers `ping` on the spot (T12:
a handler that waits on a host never delays a pong) and queues everything else for the
dispatcher, which runs the handlers one at a time in arrival order. The writer is the only code
that sends. The monitor is the watchdog outside the dispatcher's loop: `liveness.Liveness` says
when one write has been in flight too long or the connection has been busy with no completed
write (T14, T15); it aborts the transport, and the teardown follows.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
from collections import Counter
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass

from websockets.asyncio.server import ServerConnection, broadcast
from websockets.exceptions import ConnectionClosed

from forge.clock import Clock
from forge.logs import get_logger
from forge.supervisor.socket.liveness import WRITE_TIMEOUT, Liveness
from forge.supervisor.socket.outbound import TERMINAL_LIMIT, ControlOverflow, OutboundBacklog
from forge.wire import server
from forge.wire.seats import Seat, Subject
from forge.wire.server import JsonFrame

log = get_logger(__name__)

_ids = itertools.count(1)


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds a connection is served under (from `[server]`, read when it opens)."""

    write_timeout_s: float
    watchdog_s: float


_PONG = JsonFrame.encode(server.Pong()).text

INBOX_LIMIT = 256
"""Client frames waiting for the dispatcher; past this the reader stops reading (TCP pushback)."""

CORK_BEHIND = 2
"""Frames waiting behind the one being sent before the socket is corked. Corking costs two
`setsockopt` calls, more than it saves on a pair of frames (a connection's greeting and
settings); from three frames on, fewer segments and wakeups pay for it."""

WRITE_SLICE = 256 * 1024
"""Bytes the writer sends before it gives the loop a turn: a send the socket takes at once
never suspends, so a backlog of megabytes went out in one turn and held every other
connection (and its pings) for 100-400 ms on a loaded machine."""

FLUSH_AT_MOST = 16 * 1024
"""The largest frame the end-of-turn flush writes. Half websockets' write buffer high-water
mark: one such frame into an empty buffer never leaves the connection paused, so a peer that
stops reading is still caught by the writer task's stamped, awaited sends (`write_timeout_s`);
larger frames (a tab's key frame) always go through the writer task."""

Accept = Callable[["Connection", str | bytes], object | None]
"""Decode one client frame: the item to dispatch, or None when it was answered or dropped."""
Dispatch = Callable[["Connection", object], Awaitable[None]]


class Connection:
    """A client's socket and what the server holds for it; nothing outlives the connection (T17)."""

    def __init__(
        self,
        ws: ServerConnection,
        *,
        peer: str,
        deflate: bool,
        formats: tuple[str, ...],
        limits: Limits,
        clock: Clock,
    ) -> None:
        self.id = next(_ids)
        self.peer = peer
        self.deflate = deflate
        """The client dialled `?deflate=1`: large JSON crosses as kind 3 (T19)."""
        self.formats = formats
        """Image formats the client declared at the upgrade (`?formats=webp,jpeg`, D3)."""
        self.subscriptions: Counter[Subject] = Counter()
        """Counted, not flagged (S09): two subscribes need two unsubscribes."""
        self.showing: Seat | None = None
        self.answering = False
        """Sticky and one-way (S05)."""
        self.reviews: set[Seat] = set()
        """Seats this connection subscribed with `review: true` (stored; no effect yet, O-S5)."""
        self._ws = ws
        self._clock = clock
        self._backlog = OutboundBacklog()
        self._wakeup = asyncio.Event()
        self._writer_idle = False
        self._flush_due = False
        self._cork = Cork(ws.transport.get_extra_info("socket"))
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._inbox: asyncio.Queue[object] = asyncio.Queue(INBOX_LIMIT)
        self._busy = False
        self._write_started: float | None = None
        self._liveness = Liveness(limits.write_timeout_s, limits.watchdog_s, clock.monotonic())
        self._closing_reason: str | None = None
        self._closed = False

    # Outbound: every frame is queued here and written by the one writer.

    def send(self, message: server.ServerMessage) -> None:
        """Send one server message (a control frame: never dropped)."""
        self.send_frame(JsonFrame.encode(message))

    def send_frame(self, frame: JsonFrame) -> None:
        """Send a JSON frame encoded once for many connections (text, or kind 3 when large)."""
        data, is_text = frame.for_connection(self.deflate)
        self._queue_control(data, is_text)

    def send_pong(self) -> None:
        """Answer a client's `ping`. A pong proves the reader runs, not that handlers progress,
        so it does not count as progress for the watchdog (else a pinging client would keep a
        connection whose handler never returns alive for ever)."""
        self._queue_control(_PONG, True, keepalive=True)

    def send_binary(self, data: bytes) -> None:
        """Send a binary frame that must arrive (never dropped, like a control frame)."""
        self._queue_control(data, False)

    def send_latest(self, stream: Hashable, data: bytes) -> None:
        """Send a frame that a newer one of the same `stream` supersedes while it waits (B07)."""
        if not self._closed:
            self._backlog.latest(stream, data)
            self._wake()

    def send_bounded(
        self,
        stream: Hashable,
        data: bytes,
        *,
        limit: int = TERMINAL_LIMIT,
        on_overflow: Callable[[], None] | None = None,
    ) -> bool:
        """Send a chunk of a stream that may be cut: past `limit` unsent bytes the stream's waiting
        chunks are dropped, `on_overflow` runs once, and False is returned."""
        if self._closed:
            return False
        queued = self._backlog.bounded(stream, data, limit=limit, on_overflow=on_overflow)
        if queued:
            self._wake()
        elif self._waiters:
            self._wake_writers()  # the cut freed bytes a producer may be waiting on
        return queued

    def send_recent(self, stream: Hashable, data: bytes, *, limit: int) -> int:
        """Send a frame of a stream that keeps its newest `limit` bytes waiting (a tab's sound):
        older waiting frames are dropped to make room; how many."""
        if self._closed:
            return 0
        dropped = self._backlog.recent(stream, data, limit=limit)
        self._wake()
        return dropped

    @property
    def pending_bytes(self) -> int:
        """Bytes queued and not yet written, across every stream."""
        return self._backlog.pending_bytes

    def stream_pending(self, stream: Hashable) -> int:
        """Bytes of one bounded or latest stream still waiting."""
        return self._backlog.stream_pending(stream)

    async def writable(self, below: int = 0) -> None:
        """Wait until at most `below` bytes are unsent (a producer's backpressure); returns at
        once on a closed connection, so a producer never hangs on a dead peer."""
        if self._closed or self._backlog.pending_bytes <= below:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append((below, waiter))
        await waiter

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def dispatch_idle(self) -> bool:
        """No frame of this connection waits for the dispatcher or is being handled: one served
        on the read path now stays in arrival order."""
        return not self._busy and self._inbox.empty()

    def close(self, reason: str) -> None:
        """End the connection now: abort the transport; `serve` runs the teardown."""
        if self._closing_reason is None:
            self._closing_reason = reason
        self._ws.transport.abort()

    def _queue_control(self, data: bytes, is_text: bool, *, keepalive: bool = False) -> None:
        if self._closed:
            return
        try:
            self._backlog.control(data, text=is_text, keepalive=keepalive)
        except ControlOverflow as overflow:
            log.warning("socket_backlog_overflow", peer=self.peer, why=str(overflow))
            self.close("backlog_overflow")
            return
        self._wake()

    def _wake(self) -> None:
        """A frame was queued. With the writer task idle, what the turn queues is written by
        one callback at the turn's end while the socket takes it at once: waking the writer task
        for each frame was most of a small frame's cost (a tab's sound is 50 frames a second per
        viewer, a keystroke's echo one). What the socket does not take at once is the writer
        task's, which waits for the peer."""
        if self._writer_idle and not self._wakeup.is_set():
            if not self._flush_due:
                self._flush_due = True
                asyncio.get_running_loop().call_soon(self._flush)
        else:
            self._wakeup.set()

    def _flush(self) -> None:
        self._flush_due = False
        if self._closed or not self._writer_idle or self._wakeup.is_set():
            return
        transport = self._ws.transport
        cork = self._cork
        if len(self._backlog) > CORK_BEHIND:
            cork.hold()
        wrote = False
        sent = 0
        while sent < WRITE_SLICE and transport.get_write_buffer_size() == 0:
            entry = self._backlog.pop(at_most=FLUSH_AT_MOST)
            if entry is None:
                break
            sent += len(entry.data)
            try:
                broadcast((self._ws,), entry.data, raise_exceptions=True, text=entry.text)
            except ExceptionGroup as failed:
                log.info("socket_write_failed", peer=self.peer, error=repr(failed.exceptions[0]))
                self.close("write_failed")
                return
            wrote = wrote or not entry.keepalive
        if wrote:
            self._liveness.wrote(self._clock.monotonic())
        if self._waiters:
            self._wake_writers()
        if len(self._backlog) > 0:
            self._wakeup.set()  # the writer sends the rest, and releases the cork when done
        else:
            cork.release()

    # The four tasks.

    async def serve(self, accept: Accept, dispatch: Dispatch, teardown: Callable[[], None]) -> None:
        """Run reader, dispatcher, writer and monitor until one ends; cancel the rest; tear down
        once."""
        tasks = [
            asyncio.create_task(self._read(accept), name=f"conn{self.id}-read"),
            asyncio.create_task(self._dispatch(dispatch), name=f"conn{self.id}-dispatch"),
            asyncio.create_task(self._write(), name=f"conn{self.id}-write"),
            asyncio.create_task(self._monitor(), name=f"conn{self.id}-monitor"),
        ]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._closed = True
            self._wake_writers(closing=True)
            for task in tasks:
                task.cancel()
            for outcome in await asyncio.gather(*tasks, return_exceptions=True):
                if isinstance(outcome, Exception):
                    log.error("socket_task_failed", peer=self.peer, error=repr(outcome))
            teardown()
            log.info(
                "socket_closed",
                peer=self.peer,
                connection=self.id,
                reason=self._closing_reason or "closed",
                code=self._ws.close_code,
            )

    async def _read(self, accept: Accept) -> None:
        try:
            async for message in self._ws:
                item = accept(self, message)
                if item is not None:
                    await self._inbox.put(item)
        except ConnectionClosed:
            return

    async def _dispatch(self, dispatch: Dispatch) -> None:
        while True:
            item = await self._inbox.get()
            self._busy = True
            await dispatch(self, item)
            self._busy = self._inbox.qsize() > 0

    async def _write(self) -> None:
        """Send the backlog in order. While `CORK_BEHIND` or more frames wait behind the one
        being sent, the socket is corked so a burst of small frames leaves as full segments
        (fewer loopback packets and wakeups); it is uncorked the moment the backlog is empty."""
        cork = self._cork
        sent = 0
        while True:
            if sent >= WRITE_SLICE:  # a send the socket takes at once never suspends
                sent = 0
                await asyncio.sleep(0)
            entry = self._backlog.pop()
            if entry is None:
                cork.release()
                self._wakeup.clear()
                sent = 0
                self._writer_idle = True
                try:
                    await self._wakeup.wait()
                finally:
                    self._writer_idle = False
                continue
            if len(self._backlog) >= CORK_BEHIND:
                cork.hold()
            self._write_started = self._clock.monotonic()
            try:
                await self._ws.send(entry.data, text=entry.text)
            except ConnectionClosed:
                return
            self._write_started = None
            sent += len(entry.data)
            if not entry.keepalive:
                self._liveness.wrote(self._clock.monotonic())
            if self._waiters:
                self._wake_writers()

    def _wake_writers(self, *, closing: bool = False) -> None:
        pending = self._backlog.pending_bytes
        still = []
        for below, waiter in self._waiters:
            if closing or pending <= below:
                if not waiter.done():
                    waiter.set_result(None)
            else:
                still.append((below, waiter))
        self._waiters = still

    async def _monitor(self) -> None:
        liveness = self._liveness
        while True:
            await self._clock.sleep(liveness.tick_s)
            busy = self._busy or len(self._backlog) > 0
            now = self._clock.monotonic()
            verdict = liveness.check(now, write_started=self._write_started, busy=busy)
            if verdict is not None:
                bound = (
                    liveness.write_timeout_s if verdict == WRITE_TIMEOUT else liveness.watchdog_s
                )
                log.warning(f"socket_{verdict}", peer=self.peer, bound_s=bound)
                self.close(verdict)
                return


class Cork:
    """TCP_CORK on a socket, where the platform has it (Linux); a no-op elsewhere."""

    def __init__(self, sock: socket.socket | None) -> None:
        self._sock = sock if hasattr(socket, "TCP_CORK") else None
        self._held = False

    def hold(self) -> None:
        if self._sock is not None and not self._held:
            self._held = True
            self._set(1)

    def release(self) -> None:
        if self._sock is not None and self._held:
            self._held = False
            self._set(0)

    def _set(self, value: int) -> None:
        assert self._sock is not None
        # A socket already closed under us needs no cork. uvloop's stand-in for a closed
        # transport's socket raises ValueError ("negative file descriptor"), not OSError: left
        # to escape, it ended a flush with a traceback in the log (seen in a chaos run).
        with contextlib.suppress(OSError, ValueError):
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, value)
