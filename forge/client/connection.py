"""One open socket to a forge supervisor, as a client of its protocol.

`connect(url)` opens it, reads the greeting and the settings frame (G01), and starts two tasks:
the reader, which decodes every frame (`forge.client.frames`), answers the requests waiting on
it (a `subscribe` by its snapshot, a verb sent with `reply_to` by its `reply`, either by an
`error` naming the verb) and queues everything else as events; and the prober, which runs the
T21 probe (`forge.client.probe`) on the injected clock over the bytes the socket has received.
The event queue is bounded: a consumer that stops reading stops the reader, so the socket's
own flow control (and the server's drop-to-a-fresh-view policy) takes over, not our memory.
"""

from __future__ import annotations

import asyncio
import http
import itertools
import ssl
from collections import deque
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import msgspec
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI
from websockets.frames import CloseCode

from forge.access.token import token_path
from forge.client.auth import subprotocols
from forge.client.errors import ConnectionLost, ServerRefused, SupervisorUnreachable, TokenRefused
from forge.client.frames import (
    Error,
    Frame,
    Greeting,
    MalformedFrame,
    Pong,
    Reply,
    Settings,
    Snapshot,
    decode_frame,
)
from forge.client.probe import DEFAULT_TIMING, Beat, Probe, ProbeTiming
from forge.clock import SYSTEM_CLOCK, Clock
from forge.errors import UserError
from forge.logs import get_logger
from forge.wire.binary import terminal_input
from forge.wire.client import ClientMessage, Ping, Showing, Subscribe, Unsubscribe
from forge.wire.seats import Seat, Subject

log = get_logger(__name__)

OPEN_TIMEOUT_S = 10.0
"""How long the dial, the handshake and the greeting and settings frames may take together."""
EVENT_BACKLOG = 256
"""Frames queued for a consumer before the reader stops reading the socket."""

T = TypeVar("T")
M = TypeVar("M", bound=ClientMessage)

_encoder = msgspec.json.Encoder()


class _CountingConnection(ClientConnection):
    """websockets' client connection, counting the bytes under it: the probe's traffic."""

    bytes_received = 0

    def data_received(self, data: bytes) -> None:
        self.bytes_received += len(data)
        super().data_received(data)


class ForgeConnection:
    """An open connection; `greeting` and `settings` are the server's first two frames."""

    def __init__(
        self,
        ws: _CountingConnection,
        url: str,
        greeting: Greeting,
        settings: Settings,
        *,
        clock: Clock,
        timing: ProbeTiming,
    ) -> None:
        self.url = url
        self.greeting = greeting
        self.settings = settings
        self._ws = ws
        self._clock = clock
        self._probe = Probe(clock.monotonic(), ws.bytes_received, timing)
        self._reply_ids = itertools.count(1)
        self._requests: dict[int | str, tuple[str, asyncio.Future[Any]]] = {}
        self._subscribes: deque[tuple[Subject, asyncio.Future[dict[str, Any]]]] = deque()
        self._events: deque[Frame] = deque()
        self._arrived = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._lost: str | None = None
        self._dead_reason: str | None = None
        self._tasks = [
            asyncio.create_task(self._read(), name="forge-client-read"),
            asyncio.create_task(self._beat(), name="forge-client-probe"),
        ]

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        clock: Clock = SYSTEM_CLOCK,
        timing: ProbeTiming = DEFAULT_TIMING,
        open_timeout: float = OPEN_TIMEOUT_S,
        tls: ssl.SSLContext | None = None,
        token: str | None = None,
    ) -> ForgeConnection:
        """Connect and read the greeting; `SupervisorUnreachable` says why nothing answered.

        The token is `token`, else the one in forge's state directory (read at every dial, so a
        rotation is picked up by the next one); `tls` is the context for a `wss://` URL."""
        try:
            handshake = _handshake(url, tls=tls, token=token)
            ws, greeting, settings = await _within(clock, open_timeout, handshake)
        except TimeoutError:
            raise SupervisorUnreachable(url, f"no answer within {open_timeout:g} s") from None
        log.debug("client_connected", url=url, forge_version=greeting.forge_version)
        return cls(ws, url, greeting, settings, clock=clock, timing=timing)

    # Requests.

    async def send(self, message: ClientMessage) -> None:
        """Send one client message (fire and forget)."""
        await self._send_data(_encoder.encode(message), text=True)

    async def subscribe(self, what: Subject, *, answering: bool = False) -> dict[str, Any]:
        """Subscribe and return the snapshot's data; updates then arrive as events (S03)."""
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._subscribes.append((what, waiter))
        await self.send(Subscribe(what=what, answering=answering))
        return await waiter

    async def unsubscribe(self, what: Subject) -> None:
        await self.send(Unsubscribe(what=what))

    async def show(self, seat: Seat | None) -> None:
        """Say which seat this connection has on screen (S10)."""
        await self.send(Showing(seat=seat))

    async def request(self, message: M) -> Any:
        """Send a verb with a fresh `reply_to` and return its reply's body (O-S9)."""
        reply_to = next(self._reply_ids)
        kind = str(type(message).__struct_config__.tag)
        waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._requests[reply_to] = (kind, waiter)
        await self.send(msgspec.structs.replace(message, reply_to=reply_to))
        return await waiter

    async def send_input(self, terminal: int, data: bytes) -> None:
        """Keystrokes for a terminal (kind 5, B10)."""
        await self._send_data(terminal_input(terminal=terminal, data=data), text=False)

    async def probe_now(self) -> None:
        """Probe at once (a return from the background), unless a probe is already out."""
        if self._probe.wake(self._clock.monotonic()) is Beat.PING:
            await self.send(Ping())

    @property
    def bytes_received(self) -> int:
        """Bytes read off the socket so far (frames, pongs and the server's own pings)."""
        return self._ws.bytes_received

    @property
    def probe_outstanding(self) -> bool:
        """A probe is out and no byte had arrived by the last beat."""
        return self._probe.outstanding

    # Events.

    async def next_event(self) -> Frame:
        """The next frame no request was waiting for; raises ConnectionLost once it ended."""
        while not self._events:
            if self._lost is not None:
                raise ConnectionLost(self._lost)
            self._arrived.clear()
            await self._arrived.wait()
        frame = self._events.popleft()
        if len(self._events) < EVENT_BACKLOG:
            self._room.set()
        return frame

    @property
    def lost(self) -> str | None:
        """Why the connection ended, None while it is open."""
        return self._lost

    async def close(self) -> None:
        """Close the socket (1000) and stop both tasks."""
        await self._ws.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._end("closed by this client")

    async def __aenter__(self) -> ForgeConnection:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # The two tasks.

    async def _read(self) -> None:
        try:
            async for message in self._ws:
                try:
                    frame = decode_frame(message)
                except MalformedFrame as error:
                    log.warning("client_frame_malformed", url=self.url, why=str(error))
                    continue
                if not self._answers(frame):
                    self._events.append(frame)
                    self._arrived.set()
                    if len(self._events) >= EVENT_BACKLOG:
                        self._room.clear()
                        await self._room.wait()
        except ConnectionClosed:
            pass
        self._end(self._dead_reason or _close_reason(self._ws))

    def _answers(self, frame: Frame) -> bool:
        """Hand `frame` to the request waiting for it; False when none is."""
        if isinstance(frame, Pong):
            return True
        if isinstance(frame, Reply):
            waiting = self._requests.pop(frame.reply_to, None)
            if waiting is None:
                return False
            _, waiter = waiting
            if not waiter.done():
                waiter.set_result(frame.body)
            return True
        if isinstance(frame, Snapshot):
            for index, (what, snapshot_waiter) in enumerate(self._subscribes):
                if what == frame.subject:
                    del self._subscribes[index]
                    if not snapshot_waiter.done():
                        snapshot_waiter.set_result(frame.data)
                    return True
            return False
        if isinstance(frame, Error):
            return self._refuse(frame)
        return False

    def _refuse(self, error: Error) -> bool:
        """An error naming a verb fails the oldest request of that verb (S18)."""
        refusal = ServerRefused(error.what, error.why)
        if error.what == "subscribe" and self._subscribes:
            _, snapshot_waiter = self._subscribes.popleft()
            snapshot_waiter.set_exception(refusal)
            return True
        for reply_to, (kind, waiter) in self._requests.items():
            if kind == error.what:
                del self._requests[reply_to]
                waiter.set_exception(refusal)
                return True
        return False

    async def _beat(self) -> None:
        timing = self._probe.timing
        while True:
            await self._clock.sleep(timing.beat_s)
            beat = self._probe.beat(self._clock.monotonic(), self._ws.bytes_received)
            if beat is Beat.PING:
                await self.send(Ping())
            elif beat is Beat.DEAD:
                self._dead_reason = f"no answer to a ping within {timing.deadline_s:g} s"
                log.info("client_probe_expired", url=self.url, deadline_s=timing.deadline_s)
                self._ws.transport.abort()
                return

    # Plumbing.

    async def _send_data(self, data: bytes, *, text: bool) -> None:
        if self._lost is not None:
            raise ConnectionLost(self._lost)
        try:
            await self._ws.send(data, text=text)
        except ConnectionClosed:
            raise ConnectionLost(self._dead_reason or _close_reason(self._ws)) from None

    def _end(self, reason: str) -> None:
        """Fail every waiting request and wake the consumer; idempotent."""
        if self._lost is not None:
            return
        self._lost = reason
        lost = ConnectionLost(reason)
        for _, waiter in self._requests.values():
            if not waiter.done():
                waiter.set_exception(lost)
        for _, snapshot_waiter in self._subscribes:
            if not snapshot_waiter.done():
                snapshot_waiter.set_exception(lost)
        self._requests.clear()
        self._subscribes.clear()
        self._arrived.set()
        self._room.set()
        if self._tasks[1] is not asyncio.current_task():
            self._tasks[1].cancel()


@asynccontextmanager
async def connect(
    url: str,
    *,
    clock: Clock = SYSTEM_CLOCK,
    timing: ProbeTiming = DEFAULT_TIMING,
    open_timeout: float = OPEN_TIMEOUT_S,
    tls: ssl.SSLContext | None = None,
    token: str | None = None,
) -> AsyncIterator[ForgeConnection]:
    """`async with connect(url) as connection:` an open connection, closed on the way out."""
    connection = await ForgeConnection.open(
        url, clock=clock, timing=timing, open_timeout=open_timeout, tls=tls, token=token
    )
    try:
        yield connection
    finally:
        await connection.close()


async def _handshake(
    url: str, *, tls: ssl.SSLContext | None, token: str | None
) -> tuple[_CountingConnection, Greeting, Settings]:
    """Dial and read frames 1 and 2; every way it fails is said in words a person can act on."""
    ws = await _dial(url, tls=tls, token=token)
    try:
        first = decode_frame(await ws.recv())
        second = decode_frame(await ws.recv())
    except (ConnectionClosed, MalformedFrame) as error:
        await ws.close()
        raise SupervisorUnreachable(url, f"the server did not greet: {error}") from None
    except BaseException:
        ws.transport.abort()
        raise
    if not isinstance(first, Greeting) or not isinstance(second, Settings):
        await ws.close()
        raise SupervisorUnreachable(url, "the first frames were not greeting and settings")
    return ws, first, second


async def _dial(url: str, *, tls: ssl.SSLContext | None, token: str | None) -> _CountingConnection:
    try:
        ws = await ws_connect(
            url,
            subprotocols=subprotocols(token),
            ssl=tls,
            create_connection=_CountingConnection,
            compression=None,
            max_size=None,
            ping_interval=None,
            open_timeout=None,
        )
    except InvalidURI as error:
        raise UserError(f"{url} is not a WebSocket URL ({error})") from None
    except ConnectionRefusedError:
        raise SupervisorUnreachable(url, "connection refused") from None
    except InvalidStatus as error:
        status = error.response.status_code
        if status in (http.HTTPStatus.UNAUTHORIZED, http.HTTPStatus.TOO_MANY_REQUESTS):
            raise TokenRefused(url, token_path() if token is None else None, status) from None
        raise SupervisorUnreachable(url, f"the server answered HTTP {status}") from None
    except (InvalidHandshake, ConnectionError) as error:
        hint = "; if the supervisor serves TLS, dial wss://" if url.startswith("ws://") else ""
        raise SupervisorUnreachable(url, f"the handshake failed ({error}){hint}") from None
    except OSError as error:
        raise SupervisorUnreachable(url, error.strerror or str(error)) from None
    assert isinstance(ws, _CountingConnection)
    return ws


async def _within(clock: Clock, seconds: float, work: Awaitable[T]) -> T:
    """`work`'s result, or TimeoutError once `seconds` pass on `clock` (the work is cancelled)."""
    task = asyncio.ensure_future(work)
    timer = asyncio.ensure_future(clock.sleep(seconds))
    try:
        await asyncio.wait((task, timer), return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
    if not task.done():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise TimeoutError
    return task.result()


def _close_reason(ws: ClientConnection) -> str:
    code = ws.close_code
    if code is None or code == CloseCode.ABNORMAL_CLOSURE:  # no close frame: the link just ended
        return "the connection dropped"
    reason = ws.close_reason
    return f"closed by the server (code {code}{': ' + reason if reason else ''})"
