"""The token check on every upgrade, before the handshake, and the drop of stale holders.

`admit` runs inside `process_request`: a peer with recent failures first waits out its backoff
(`forge.access.throttle`), then the offered subprotocols are judged against the token
(`forge.wire.auth`). A missing or wrong token is **401** with a `socket_auth_refused{peer, why}`
record, and no handshake happens. The token file is re-read at each upgrade and once a second,
so `forge token rotate` refuses the old token at once and, within a second, closes every
connection admitted with it (1008, "token rotated"). A deleted file is a rotation too: a new
token is written. Records name the token only by its fingerprint.
"""

from __future__ import annotations

import asyncio
import http
import weakref
from pathlib import Path

from websockets.asyncio.server import ServerConnection
from websockets.http11 import Request, Response

from forge.access.throttle import Throttle
from forge.access.token import ensure_token, fingerprint, read_token, rotate_token, token_path
from forge.clock import Clock
from forge.errors import UserError
from forge.logs import get_logger
from forge.wire.auth import TOKEN_PREFIX, Verdict, judge

log = get_logger(__name__)

WATCH_S = 1.0
"""How often the token file is re-read between upgrades (rotation drops within this)."""
ROTATED_CODE = 1008
ROTATED_REASON = "token rotated"


def offered_subprotocols(request: Request) -> list[str]:
    """The subprotocols the upgrade offers: the header's comma-separated values. A value that is
    not a valid token matches nothing here, and the library refuses the header with 400 later."""
    return [
        value.strip()
        for header in request.headers.get_all("Sec-WebSocket-Protocol")
        for value in header.split(",")
    ]


def peer_host(connection: ServerConnection) -> str:
    """The peer's address without its port: what the throttle counts failures against."""
    address = connection.remote_address
    return str(address[0]) if address else "unknown"


def peer_name(connection: ServerConnection) -> str:
    """`host:port`, as every socket record names a peer."""
    address = connection.remote_address
    return f"{address[0]}:{address[1]}" if address else "unknown"


class SocketAuth:
    """Holds the token in force and which connections were admitted with which token."""

    def __init__(self, clock: Clock, *, path: Path | None = None) -> None:
        self._clock = clock
        self._path = path or token_path()
        self._token = ensure_token(self._path)
        self._holders: weakref.WeakKeyDictionary[ServerConnection, str] = (
            weakref.WeakKeyDictionary()
        )
        self.throttle = Throttle()
        self._closing: set[asyncio.Task[None]] = set()
        self._unreadable: str | None = None
        log.info("socket_token", fingerprint=fingerprint(self._token), path=str(self._path))

    async def admit(self, connection: ServerConnection, request: Request) -> Response | None:
        """None to go on with the handshake; else the 401 to answer with."""
        token = await self._judge(connection, request, offered_subprotocols(request))
        if token is None:
            return _refusal(connection)
        self._holders[connection] = token
        return None

    async def check(self, connection: ServerConnection, request: Request) -> Response:
        """`GET /token-check` with `Authorization: Bearer <token>`: 204 or 401.

        A page cannot read why a WebSocket upgrade failed (every failure is close code 1006), so
        after a dial that never opened it asks here, under the same throttle and record, and
        shows "this device is not paired" instead of redialling forever."""
        scheme, _, bearer = request.headers.get("Authorization", "").partition(" ")
        offered = [TOKEN_PREFIX + bearer] if scheme.lower() == "bearer" and bearer else []
        if await self._judge(connection, request, offered) is None:
            return _refusal(connection)
        return connection.respond(http.HTTPStatus.NO_CONTENT, "")

    async def _judge(
        self, connection: ServerConnection, request: Request, offered: list[str]
    ) -> str | None:
        """The token in force when `offered` carries it, else None (slowed, counted, logged)."""
        host = peer_host(connection)
        wait = self.throttle.wait(host, self._clock.monotonic())
        if wait > 0:
            log.info("socket_auth_slowed", peer=peer_name(connection), wait_s=round(wait, 3))
            await self._clock.sleep(wait)
        token = self.current()
        verdict = judge(offered, token)
        if verdict is Verdict.ACCEPTED:
            self.throttle.succeeded(host)
            return token
        self.throttle.failed(host, self._clock.monotonic())
        log.warning(
            "socket_auth_refused",
            peer=peer_name(connection),
            why=verdict.value,
            origin=request.headers.get("Origin"),
            strikes=self.throttle.strikes(host, self._clock.monotonic()),
        )
        return None

    def holds_current(self, connection: ServerConnection) -> bool:
        """The connection was admitted with the token still in force."""
        return self._holders.get(connection) == self._token

    def current(self) -> str:
        """The token in force, after taking in a rotation (or a deleted file) if there was one.

        An unreadable file keeps the token in force; `socket_token_unreadable` says so once."""
        try:
            stored = read_token(self._path) or rotate_token(self._path)
        except (UserError, OSError) as error:
            if str(error) != self._unreadable:
                self._unreadable = str(error)
                log.error("socket_token_unreadable", path=str(self._path), why=str(error))
            return self._token
        self._unreadable = None
        if stored != self._token:
            self._rotated(stored)
        return self._token

    async def watch(self) -> None:
        """Re-read the token file every `WATCH_S`, so a rotation drops its old holders."""
        while True:
            await self._clock.sleep(WATCH_S)
            self.current()

    def _rotated(self, token: str) -> None:
        self._token = token
        stale = [ws for ws, held in self._holders.items() if held != token]
        log.info("socket_token_rotated", fingerprint=fingerprint(token), dropped=len(stale))
        for ws in stale:
            del self._holders[ws]
            task = asyncio.get_running_loop().create_task(ws.close(ROTATED_CODE, ROTATED_REASON))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)


def _refusal(connection: ServerConnection) -> Response:
    return connection.respond(
        http.HTTPStatus.UNAUTHORIZED,
        "This socket needs forge's token (forge pair, forge token show).\n",
    )
