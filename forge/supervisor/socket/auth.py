"""The token check on every upgrade, before the handshake, and the drop of stale holders.

`admit` runs inside `process_request` and judges the offered subprotocols against the token
(`forge.wire.auth`) first: the right token goes on to the handshake at once, whatever anyone else
sent. A missing or wrong one is a strike against its peer (`forge.access.throttle`), answered
**401** once its backoff has passed, or **429** at once when that peer already has its quota of
refusals waiting; each refusal writes a `socket_auth_refused{peer, why, origin, strikes, answer,
wait_s}` record, and no handshake happens. The token file is re-read at each upgrade and once a
second, so `forge token rotate` refuses the old token at once and, within a second, closes every
connection admitted with it (1008, "token rotated"). A deleted file is a rotation too: a new
token is written. Records name the token only by its fingerprint.
"""

from __future__ import annotations

import asyncio
import http
import math
import weakref
from pathlib import Path

from websockets.asyncio.server import ServerConnection
from websockets.http11 import Request, Response

from forge.access.throttle import Hold, Shed, Throttle, peer_of
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
REFUSED_BODY = "This socket needs forge's token (forge pair, forge token show).\n"
SHED_BODY = "Too many refused tokens from this address are waiting; retry later.\n"


def offered_subprotocols(request: Request) -> list[str]:
    """The subprotocols the upgrade offers: the header's comma-separated values. A value that is
    not a valid token matches nothing here, and the library refuses the header with 400 later."""
    return [
        value.strip()
        for header in request.headers.get_all("Sec-WebSocket-Protocol")
        for value in header.split(",")
    ]


def peer_host(connection: ServerConnection) -> str:
    """Who the throttle counts a refusal against: the peer's address (an IPv6 one's /64)."""
    address = connection.remote_address
    return peer_of(str(address[0])) if address else "unknown"


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
        self._throttle = Throttle()
        self._closing: set[asyncio.Task[None]] = set()
        self._unreadable: str | None = None
        log.info("socket_token", fingerprint=fingerprint(self._token), path=str(self._path))

    async def admit(self, connection: ServerConnection, request: Request) -> Response | None:
        """None to go on with the handshake; else the refusal to answer with (401 or 429)."""
        token = self.current()
        verdict = judge(offered_subprotocols(request), token)
        if verdict is not Verdict.ACCEPTED:
            return await self._refusal(connection, request, verdict)
        self._holders[connection] = token
        return None

    async def check(self, connection: ServerConnection, request: Request) -> Response:
        """`GET /token-check` with `Authorization: Bearer <token>`: 204, or the refusal (two
        bearer tokens are a wrong one, as two token subprotocols are).

        A page cannot read why a WebSocket upgrade failed (every failure is close code 1006), so
        after a dial that never opened it asks here, under the same throttle and record, and
        shows "this device is not paired" instead of redialling forever."""
        offered = [
            TOKEN_PREFIX + bearer
            for scheme, _, bearer in (
                v.partition(" ") for v in request.headers.get_all("Authorization")
            )
            if scheme.lower() == "bearer" and bearer
        ]
        verdict = judge(offered, self.current())
        if verdict is not Verdict.ACCEPTED:
            return await self._refusal(connection, request, verdict)
        return connection.respond(http.HTTPStatus.NO_CONTENT, "")

    async def _refusal(
        self, connection: ServerConnection, request: Request, verdict: Verdict
    ) -> Response:
        """A refused token's answer: a 401 once the peer's backoff has passed, or a 429 now."""
        decision = self._throttle.refused(peer_host(connection), self._clock.monotonic())
        if isinstance(decision, Hold):
            status, wait = http.HTTPStatus.UNAUTHORIZED, decision.wait_s
        else:
            status, wait = http.HTTPStatus.TOO_MANY_REQUESTS, 0.0
        log.warning(
            "socket_auth_refused",
            peer=peer_name(connection),
            why=verdict.value,
            origin=", ".join(request.headers.get_all("Origin")) or None,
            strikes=decision.strikes,
            answer=status.value,
            wait_s=round(wait, 3),
        )
        if isinstance(decision, Shed):
            response = connection.respond(status, SHED_BODY)
            response.headers["Retry-After"] = str(math.ceil(decision.retry_s))
            return response
        await self._clock.sleep(wait)
        return connection.respond(status, REFUSED_BODY)

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
