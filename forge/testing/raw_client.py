"""A WebSocket client whose misbehaviour a test picks: it may stop answering pings, or reading.

Built on websockets' sans-I/O `ClientProtocol` over a plain asyncio stream, so the test decides
what is written back (pongs included) and when the socket is read at all. For tests of what the
server does to a bad peer (liveness, backlog limits); a well-behaved client is websockets' own.

    async with RawClient(answer_pings=False) as peer:
        await peer.open(supervised.port, receive_buffer=4096)   # a small buffer stalls fast
        peer.send_json({"kind": "ping"})
        frame = await peer.next_frame()          # data or control frames, as they came
        rest = await peer.read_to_eof()          # until the server drops the connection
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from typing import Any

from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from forge.client.auth import subprotocols


class RawClient:
    """`answer_pings=False` reads everything and writes nothing back after the handshake."""

    def __init__(self, *, answer_pings: bool = True) -> None:
        self.answer_pings = answer_pings
        self.frames: list[Frame] = []
        self._protocol: ClientProtocol
        self._reader: asyncio.StreamReader
        self._writer: asyncio.StreamWriter

    async def open(self, port: int, *, receive_buffer: int | None = None) -> None:
        """Handshake; a small `receive_buffer` makes a peer that stops reading stall us fast."""
        sock = socket.socket()
        if receive_buffer is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        self._reader, self._writer = await asyncio.open_connection(sock=sock, limit=2**16)
        self._protocol = ClientProtocol(
            parse_uri(f"ws://127.0.0.1:{port}/socket"), subprotocols=subprotocols(), max_size=None
        )
        self._protocol.send_request(self._protocol.connect())
        self._flush()
        answered = False
        while not answered:
            for event in await self._events():
                answered = answered or isinstance(event, Response)
                if isinstance(event, Frame):
                    self.frames.append(event)

    async def next_frame(self) -> Frame:
        """The next data or control frame; raises EOFError when the server closed the TCP."""
        while not self.frames:
            self.frames.extend(e for e in await self._events() if isinstance(e, Frame))
        return self.frames.pop(0)

    async def next_json(self) -> dict[str, Any]:
        while True:
            frame = await self.next_frame()
            if frame.opcode is Opcode.TEXT:
                decoded: dict[str, Any] = json.loads(bytes(frame.data))
                return decoded

    def send_json(self, message: dict[str, Any]) -> None:
        self._protocol.send_text(json.dumps(message).encode())
        self._flush()

    async def read_to_eof(self) -> bytes:
        """Drain the socket until the server ends it (a reset counts as the end)."""
        chunks = []
        try:
            while chunk := await self._reader.read(2**20):
                chunks.append(chunk)
        except ConnectionResetError:
            pass
        return b"".join(chunks)

    async def __aenter__(self) -> RawClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._writer.close()
        with contextlib.suppress(ConnectionError):
            await self._writer.wait_closed()

    async def _events(self) -> list[object]:
        data = await self._reader.read(2**16)
        if not data:
            self._protocol.receive_eof()
            raise EOFError("the server closed the connection")
        self._protocol.receive_data(data)
        events: list[object] = list(self._protocol.events_received())
        if self.answer_pings:
            self._flush()
        else:
            self._protocol.data_to_send()
        return events

    def _flush(self) -> None:
        for chunk in self._protocol.data_to_send():
            if chunk:
                self._writer.write(chunk)
