"""The socket: websockets' asyncio server at `/socket`, refusing before the handshake.

`process_request` serves the web client's files for every other path (`static.StaticSite`: the
page at `/`, its hashed assets, 404 for anything else) and answers 403 for an origin the policy
refuses (with the `socket_origin_refused{origin, peer}` record) before any greeting exists; the
library answers 426 to a request without `Upgrade`. permessage-deflate is off (O-T6) and one inbound
message is bounded at 16 MiB (the library closes with 1009 past it, O-T4).
"""

from __future__ import annotations

import http
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers, MultipleValuesError
from websockets.http11 import Request, Response

from forge.config import ServerConfig
from forge.logs import get_logger
from forge.supervisor.connection import Connection, Limits
from forge.supervisor.core import Supervisor
from forge.supervisor.static import StaticSite

log = get_logger(__name__)

SOCKET_PATH = "/socket"
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
CLOSE_TIMEOUT_S = 5.0
"""O-T2: how long a closing handshake may take before the transport is dropped."""


def _peer(connection: ServerConnection) -> str:
    address = connection.remote_address
    return f"{address[0]}:{address[1]}" if address else "unknown"


class SocketServer:
    """Serves one `Supervisor` over WebSocket on `[server] bind:port`."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor
        self.site = StaticSite.load()
        self._server: Server | None = None

    async def start(self) -> None:
        settings: ServerConfig = self.supervisor.loaded.config.server
        self._server = await serve(
            self._handle,
            settings.bind,
            settings.port,
            process_request=self._process_request,
            compression=None,
            max_size=MAX_MESSAGE_BYTES,
            ping_interval=settings.ping_interval_s,
            ping_timeout=settings.ping_timeout_s,
            close_timeout=min(CLOSE_TIMEOUT_S, settings.ping_timeout_s),
        )
        if settings.bind in ("0.0.0.0", "::"):
            log.warning(
                "socket_bind_wildcard",
                bind=settings.bind,
                why="pages served from the LAN must be listed in [server] allowed_origins",
            )
        log.info("socket_listening", bind=settings.bind, port=settings.port, path=SOCKET_PATH)

    async def close(self) -> None:
        """Stop accepting and close every connection (1001, going away)."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        if urlsplit(request.path).path != SOCKET_PATH:
            return self._page(request)
        try:
            origin = request.headers.get("Origin")
        except MultipleValuesError:
            origin = ", ".join(request.headers.get_all("Origin"))
            allowed = False
        else:
            allowed = self.supervisor.origins.allows(origin)
        if not allowed:
            log.warning("socket_origin_refused", origin=origin, peer=_peer(connection))
            return connection.respond(http.HTTPStatus.FORBIDDEN, "Forbidden origin\n")
        return None

    def _page(self, request: Request) -> Response:
        """The web client's files on the socket's own origin (the page dials `/socket` back)."""
        wanted = {
            name: ", ".join(request.headers.get_all(name))
            for name in ("accept-encoding", "if-none-match")
            if name in request.headers
        }
        answer = self.site.answer(request.method, request.path, wanted)
        status = answer.status
        return Response(status.value, status.phrase, Headers(answer.headers), answer.body)

    async def _handle(self, ws: ServerConnection) -> None:
        assert ws.request is not None
        query = parse_qs(urlsplit(ws.request.path).query)
        formats = tuple(
            name for value in query.get("formats", []) for name in value.split(",") if name
        )
        supervisor = self.supervisor
        settings = supervisor.loaded.config.server  # next_session keys: read as each one opens
        connection = Connection(
            ws,
            peer=_peer(ws),
            deflate=query.get("deflate") == ["1"],
            formats=formats,
            limits=Limits(settings.write_timeout_s, settings.watchdog_s),
            clock=supervisor.clock,
        )
        supervisor.attach(connection)
        await connection.serve(
            supervisor.accept, supervisor.dispatch, lambda: supervisor.detach(connection)
        )
