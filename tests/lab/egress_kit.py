"""Loopback stand-ins for the egress proxy's tests: servers, a resolver and a connector.

No test sends a packet beyond loopback. A "public" destination is a name the `Names` resolver
maps to a made-up global address, and `Connector` connects that address to a loopback server
instead, so the proxy's whole path (judge, connect, relay) runs while only loopback is used;
both record every call, so a test proves the proxy refused *before* resolving or connecting.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field

import h11

from forge.attempt.egress.policy import IPAddress
from forge.attempt.egress.proxy import Streams

PUBLIC_STAND_IN = ipaddress.ip_address("1.2.3.4")
"""A global address that stands for a public server; the connector sends it to loopback."""


@dataclass
class Names:
    """A resolver from a fixed table; every name asked is kept in `asked`."""

    table: Mapping[str, list[IPAddress]]
    asked: list[str] = field(default_factory=list)

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        self.asked.append(host)
        return list(self.table.get(host, []))


@dataclass
class Connector:
    """Connects `PUBLIC_STAND_IN:port` to `127.0.0.1:<routes[port]>`, refuses a port it has no
    route for; any other address fails the test (the proxy must never try one). Every attempt
    is kept in `tried`."""

    routes: dict[int, int] = field(default_factory=dict)
    tried: list[tuple[IPAddress, int]] = field(default_factory=list)

    async def __call__(self, address: IPAddress, port: int) -> Streams:
        self.tried.append((address, port))
        if address != PUBLIC_STAND_IN:
            raise AssertionError(f"the proxy tried to connect to {address}:{port}")
        if port not in self.routes:
            raise ConnectionRefusedError(f"no stand-in server for port {port}")
        return await asyncio.open_connection("127.0.0.1", self.routes[port])


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def loopback_server(handler: Handler) -> AsyncIterator[int]:
    """A TCP server on 127.0.0.1 (its port); on exit its connections are closed, their handlers
    end and are awaited, so nothing of it outlives the test's loop."""
    handlers: set[asyncio.Task[None]] = set()
    writers: set[asyncio.StreamWriter] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        writers.add(writer)
        try:
            await handler(reader, writer)
        except ConnectionError:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for writer in writers:
            writer.close()
        await asyncio.gather(*handlers, return_exceptions=True)
        await server.wait_closed()


@contextlib.asynccontextmanager
async def echo_server() -> AsyncIterator[tuple[int, list[bytes]]]:
    """A TCP server on loopback that sends back what it reads; its port and what it received."""
    received: list[bytes] = []

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            received.append(data)
            writer.write(data)
            await writer.drain()

    async with loopback_server(echo) as port:
        yield port, received


@dataclass(frozen=True)
class Seen:
    """A request as the upstream server received it."""

    method: bytes
    target: bytes
    headers: dict[bytes, bytes]
    body: bytes


@contextlib.asynccontextmanager
async def http_server() -> AsyncIterator[tuple[int, list[Seen]]]:
    """An HTTP/1.1 server on loopback answering each request with `<method> <target> <body>`."""
    seen: list[Seen] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER)
        request: h11.Request | None = None
        body = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(65536))
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                break
            else:
                return
        assert request is not None
        seen.append(Seen(request.method, request.target, dict(request.headers), body))
        answer = b" ".join([request.method, request.target, body])
        writer.write(
            conn.send(h11.Response(status_code=200, headers=[(b"transfer-encoding", b"chunked")]))
            + conn.send(h11.Data(data=answer))
            + conn.send(h11.EndOfMessage())
        )
        await writer.drain()

    async with loopback_server(serve) as port:
        yield port, seen


@dataclass
class Client:
    """A raw client of the proxy: writes request bytes, reads responses with h11."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    conn: h11.Connection = field(default_factory=lambda: h11.Connection(h11.CLIENT))

    async def request(
        self, method: bytes, target: bytes, body: bytes = b"", headers: tuple = ()
    ) -> tuple[int, bytes]:
        """One request; the response's status and body."""
        framing = [(b"content-length", str(len(body)).encode())] if body else []
        host = target.split(b"/")[2] if target.startswith(b"http://") else target
        self.writer.write(
            self.conn.send(
                h11.Request(
                    method=method,
                    target=target,
                    headers=[(b"host", host), *framing, *headers],
                )
            )
        )
        if body:
            self.writer.write(self.conn.send(h11.Data(data=body)))
        self.writer.write(self.conn.send(h11.EndOfMessage()))
        status, data = 0, b""
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                self.conn.receive_data(await self.reader.read(65536))
            elif isinstance(event, h11.Response):
                status = event.status_code
                if method == b"CONNECT" and status == 200:
                    return status, b""
            elif isinstance(event, h11.Data):
                data += event.data
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                break
        if self.conn.our_state is h11.DONE and self.conn.their_state is h11.DONE:
            self.conn.start_next_cycle()
        return status, data


@contextlib.asynccontextmanager
async def client(port: int) -> AsyncIterator[Client]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        yield Client(reader, writer)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
