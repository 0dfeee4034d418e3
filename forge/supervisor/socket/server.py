"""The socket: websockets' asyncio server at `/socket`, refusing before the handshake.

`process_request` serves the web client's files for every path but `/socket` (`static.StaticSite`:
the page at `/`, its hashed assets, 404 for anything else); for `/socket` it answers 403 for an
origin the policy refuses (with the `socket_origin_refused{origin, peer}` record) and 401 or 429
for a missing or wrong token (`forge.supervisor.socket.auth`) before any greeting exists; the
library answers 426 to a request without `Upgrade`. `/token-check` answers forge's own page and
native clients, and 403 to any other page before the token is read (`same_origin_or_native`). The
server selects the `forge.v1` subprotocol when it is offered (a client offering none still
connects when `[server] auth = "none"`). With `[server] tls_cert`/`tls_key` the same port speaks
only TLS (`forge.access.tls`). permessage-deflate is off (O-T6) and one inbound message is
bounded at 16 MiB (the library closes with 1009 past it, O-T4).
"""

from __future__ import annotations

import asyncio
import http
from collections.abc import Sequence
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers, MultipleValuesError
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

from forge.access.tls import CertPair, ServerTls
from forge.config import ServerConfig
from forge.logs import get_logger
from forge.supervisor.socket.auth import ROTATED_CODE, ROTATED_REASON, SocketAuth, peer_name
from forge.supervisor.socket.connection import Connection, Limits
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.static import StaticSite
from forge.wire import auth as wire_auth
from forge.wire.origin import is_loopback_host, same_origin_or_native

log = get_logger(__name__)

SOCKET_PATH = "/socket"
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
CLOSE_TIMEOUT_S = 5.0
"""O-T2: how long a closing handshake may take before the transport is dropped."""
TOKEN_CHECK_PATH = "/token-check"
"""Where the page asks whether its token is good (a failed upgrade cannot say why)."""


OPEN_TIMEOUT_S = 10.0
"""websockets' own default: past the throttle's longest hold (4 s), short for a dial that idles."""


class SocketServer:
    """Serves one `Supervisor` over WebSocket on `[server] bind:port`."""

    def __init__(self, supervisor: Supervisor, *, open_timeout_s: float = OPEN_TIMEOUT_S) -> None:
        self.supervisor = supervisor
        self.open_timeout_s = open_timeout_s
        """How long a connection may take to finish its opening handshake, on the event loop's
        own clock (a test whose throttle holds run on a manual clock lengthens it)."""
        self.site = StaticSite.load()
        self._server: Server | None = None
        self.auth: SocketAuth | None = None
        """None when `[server] auth = "none"` (a loopback bind only)."""
        self.tls: ServerTls | None = None
        self._watch: asyncio.Task[None] | None = None

    async def start(self) -> None:
        settings: ServerConfig = self.supervisor.loaded.config.server
        if settings.tls_cert is not None and settings.tls_key is not None:
            self.tls = ServerTls(CertPair(settings.tls_cert, settings.tls_key))
        if settings.auth == "token":
            self.auth = SocketAuth(self.supervisor.clock)
            self._watch = asyncio.create_task(self.auth.watch(), name="socket-token-watch")
        self._server = await serve(
            self._handle,
            settings.bind,
            settings.port,
            ssl=None if self.tls is None else self.tls.context,
            process_request=self._process_request,
            select_subprotocol=_select_subprotocol,
            compression=None,
            max_size=MAX_MESSAGE_BYTES,
            ping_interval=settings.ping_interval_s,
            ping_timeout=settings.ping_timeout_s,
            close_timeout=min(CLOSE_TIMEOUT_S, settings.ping_timeout_s),
            open_timeout=self.open_timeout_s,
        )
        _warn_about_reach(settings, tls=self.tls is not None, token=self.auth is not None)
        log.info(
            "socket_listening",
            bind=settings.bind,
            port=settings.port,
            path=SOCKET_PATH,
            scheme="wss" if self.tls else "ws",
            auth=settings.auth,
            tls_fingerprint=None if self.tls is None else self.tls.fingerprint,
        )

    async def close(self) -> None:
        """Stop accepting and close every connection (1001, going away)."""
        if self._watch is not None:
            self._watch.cancel()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _process_request(
        self, connection: ServerConnection, request: Request
    ) -> Response | None:
        path = urlsplit(request.path).path
        if path == TOKEN_CHECK_PATH and self.auth is not None:
            return await self._token_check(self.auth, connection, request)
        if path != SOCKET_PATH:
            return self._page(request)
        try:
            origin = request.headers.get("Origin")
        except MultipleValuesError:
            origin = ", ".join(request.headers.get_all("Origin"))
            allowed = False
        else:
            allowed = self.supervisor.origins.allows(origin)
        if not allowed:
            log.warning("socket_origin_refused", origin=origin, peer=peer_name(connection))
            return connection.respond(http.HTTPStatus.FORBIDDEN, "Forbidden origin\n")
        if self.auth is not None and _is_upgrade(request):
            return await self.auth.admit(connection, request)
        return None  # the library answers a request that is no upgrade with 426

    async def _token_check(
        self, auth: SocketAuth, connection: ServerConnection, request: Request
    ) -> Response:
        """`/token-check` for forge's own page and native clients only (403 for any other page,
        before the token is looked at), so no page elsewhere can use it to count strikes."""
        headers = request.headers
        origins, fetch_sites = headers.get_all("Origin"), headers.get_all("Sec-Fetch-Site")
        scheme = "http" if self.tls is None else "https"
        if not same_origin_or_native(origins, fetch_sites, headers.get_all("Host"), scheme):
            log.warning(
                "socket_origin_refused",
                origin=", ".join(origins) or None,
                fetch_site=", ".join(fetch_sites) or None,
                peer=peer_name(connection),
                path=TOKEN_CHECK_PATH,
            )
            return connection.respond(http.HTTPStatus.FORBIDDEN, "Forbidden origin\n")
        return await auth.check(connection, request)

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
        if self.auth is not None and not self.auth.holds_current(ws):
            await ws.close(ROTATED_CODE, ROTATED_REASON)  # rotated during its handshake
            return
        query = parse_qs(urlsplit(ws.request.path).query)
        formats = tuple(
            name for value in query.get("formats", []) for name in value.split(",") if name
        )
        supervisor = self.supervisor
        settings = supervisor.loaded.config.server  # next_session keys: read as each one opens
        connection = Connection(
            ws,
            peer=peer_name(ws),
            deflate=query.get("deflate") == ["1"],
            formats=formats,
            limits=Limits(settings.write_timeout_s, settings.watchdog_s),
            clock=supervisor.clock,
        )
        supervisor.attach(connection)
        await connection.serve(
            supervisor.accept, supervisor.dispatch, lambda: supervisor.detach(connection)
        )


def _is_upgrade(request: Request) -> bool:
    return any("websocket" in value.lower() for value in request.headers.get_all("Upgrade"))


def _select_subprotocol(
    _connection: ServerConnection, offered: Sequence[Subprotocol]
) -> Subprotocol | None:
    selected = wire_auth.select(offered)
    return None if selected is None else Subprotocol(selected)


def _warn_about_reach(settings: ServerConfig, *, tls: bool, token: bool) -> None:
    """A bind beyond loopback: say who can connect, and what a phone cannot do without TLS."""
    if is_loopback_host(settings.bind):
        return
    wildcard = settings.bind in ("0.0.0.0", "::", "")
    who = (
        "anyone who can reach this port on any of this machine's networks"
        if wildcard
        else (f"anyone who can reach {settings.bind}")
    )
    if not tls:
        log.warning(
            "socket_without_tls",
            bind=settings.bind,
            who=who + (" and holds the token" if token else ""),
            why="without TLS a phone's browser is not a secure context: no microphone "
            "(dictation), and the token crosses the network in clear; see docs/access.md",
        )
    if wildcard:
        log.warning(
            "socket_bind_wildcard",
            bind=settings.bind,
            why="pages served from the LAN must be listed in [server] allowed_origins",
        )
