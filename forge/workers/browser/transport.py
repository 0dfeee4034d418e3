"""The asyncio side of the CDP client: Chromium's debugging pipe in, futures and events out.

Every command returns its future at once, so a caller that must not wait behind a reply (input:
`Input.dispatchMouseEvent` does not answer while a dialog it opened is up) sends and moves on,
while one that needs the result awaits it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import IO, Any

from forge import eventloop
from forge.logs import get_logger
from forge.workers.browser.cdp import CdpEvent, CdpProtocol, CdpReply, JsonObject
from forge.workers.browser.errors import BrowserGone, CdpCommandFailed

log = get_logger(__name__)

EventHandler = Callable[[CdpEvent], None]


def _pipe_file(fd: int, mode: str) -> IO[Any]:
    """A file object over a pipe end, as the loop's pipe transports take (they close it)."""
    return open(fd, mode, buffering=0, closefd=True)


class _PipeReader(asyncio.Protocol):
    def __init__(self, connection: CdpConnection) -> None:
        self._connection = connection

    def data_received(self, data: bytes) -> None:
        self._connection._data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._connection._lost("Chromium closed its debugging pipe")


class CdpConnection:
    """One CDP connection over a pair of pipe file descriptors (ours to read, ours to write)."""

    def __init__(self, on_event: EventHandler) -> None:
        self._protocol = CdpProtocol()
        self._on_event = on_event
        self._waiting: dict[int, asyncio.Future[JsonObject]] = {}
        self._writer: asyncio.WriteTransport | None = None
        self._reader: asyncio.ReadTransport | None = None
        self._closed: BrowserGone | None = None
        self.lost: asyncio.Future[BrowserGone] = asyncio.get_running_loop().create_future()
        """Resolves once, with the reason, when the pipe closes."""

    async def open(self, read_fd: int, write_fd: int) -> None:
        """Adopt the pipe ends (their ownership passes to the transports)."""
        loop = asyncio.get_running_loop()
        read_pipe, write_pipe = _pipe_file(read_fd, "rb"), _pipe_file(write_fd, "wb")
        self._reader, _ = await loop.connect_read_pipe(lambda: _PipeReader(self), read_pipe)
        self._writer, _ = await loop.connect_write_pipe(asyncio.BaseProtocol, write_pipe)

    def send(
        self, method: str, params: JsonObject | None = None, session_id: str | None = None
    ) -> asyncio.Future[JsonObject]:
        """Write one command now and return the future of its result (await it or not)."""
        future: asyncio.Future[JsonObject] = asyncio.get_running_loop().create_future()
        if self._closed is not None:
            future.set_exception(self._closed)
            future.exception()
            return future
        command_id = self._protocol.command(method, params, session_id)
        self._waiting[command_id] = future
        assert self._writer is not None, "send before open"
        # Chromium gone and the pipe closed: the reader's end fails the future with the reason.
        eventloop.write_to_pipe(self._writer, self._protocol.data_to_send())
        return future

    async def call(
        self, method: str, params: JsonObject | None = None, session_id: str | None = None
    ) -> JsonObject:
        """Send and wait for the result; a refusal raises `CdpCommandFailed`."""
        return await self.send(method, params, session_id)

    def close(self) -> None:
        """Close both pipe ends; Chromium exits when its read end sees EOF."""
        for transport in (self._writer, self._reader):
            if transport is not None:
                transport.close()
        self._lost("the host closed the debugging pipe")

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def _data_received(self, data: bytes) -> None:
        self._protocol.receive_data(data)
        for message in self._protocol.messages_received():
            if isinstance(message, CdpReply):
                self._settle(message)
            else:
                try:
                    self._on_event(message)
                except Exception:
                    log.exception("browser_cdp_event_failed", method=message.method)

    def _settle(self, reply: CdpReply) -> None:
        future = self._waiting.pop(reply.id, None)
        if future is None or future.done():
            return
        if reply.result is not None:
            future.set_result(reply.result)
        else:
            future.set_exception(
                CdpCommandFailed(reply.method, reply.error_code, reply.error_message)
            )
            future.exception()  # a fire-and-forget send must not warn "never retrieved"

    def _lost(self, reason: str) -> None:
        if self._closed is not None:
            return
        self._closed = BrowserGone(reason)
        for reply in self._protocol.fail_pending(reason):
            future = self._waiting.pop(reply.id, None)
            if future is not None and not future.done():
                future.set_exception(BrowserGone(reason))
                future.exception()
        if not self.lost.done():
            self.lost.set_result(self._closed)
