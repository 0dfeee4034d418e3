"""TCP_CORK on the socket of a real transport, held and released after the peer and the
transport are gone: nothing raises (a flush of a connection closing under it must finish)."""

from __future__ import annotations

import asyncio
import socket

from forge.supervisor.socket.connection import Cork


async def test_a_cork_on_a_closed_transport_is_held_and_released_without_error() -> None:
    accepted: asyncio.Queue[asyncio.StreamWriter] = asyncio.Queue()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accepted.put(writer)

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    _, client = await asyncio.open_connection("127.0.0.1", port)
    served = await accepted.get()
    server.close()  # listening no more; the one connection stays
    await server.wait_closed()
    cork = Cork(served.transport.get_extra_info("socket"))
    cork.hold()
    raw = served.transport.get_extra_info("socket")
    assert raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK) == 1
    cork.release()
    assert raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_CORK) == 0
    served.close()
    await served.wait_closed()
    client.close()
    await client.wait_closed()
    cork.hold()  # the transport's socket is gone (uvloop: a negative descriptor)
    cork.release()
