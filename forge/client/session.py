"""A connection that comes back (T17, T21): the server keeps nothing across a reconnect, so the
client keeps what it held and asks for it again.

`ClientSession` remembers the subjects it subscribed, the seat it shows and the terminal it is
attached to (with its control and size). When the connection ends, `next_event` returns one
`Disconnected`, then redials with a doubling delay on the injected clock until a supervisor
answers, and replays in the protocol's order: re-subscribe, re-attach the terminal (a fresh
`terminal_view` repaints it), take control and resize again, re-send `showing`. A subject the
new server refuses is let go and its error returned as an event; a terminal the server no longer
has, or any terminal after a supervisor restart (home's `boot_id` changed: ids start from 1
again, so the same number may be another shell), is a `ServerRefused` naming `terminal_view`.
"""

from __future__ import annotations

import ssl
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from forge.client.connection import OPEN_TIMEOUT_S, ForgeConnection
from forge.client.errors import ConnectionLost, ServerRefused, SupervisorUnreachable
from forge.client.frames import Error, Frame, Greeting, Snapshot
from forge.client.probe import DEFAULT_TIMING, ProbeTiming
from forge.clock import SYSTEM_CLOCK, Clock
from forge.logs import get_logger
from forge.wire.client import TerminalControl, TerminalResize, TerminalView
from forge.wire.seats import HOME, Seat, Subject

log = get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Redial:
    """The delay between failed dials: doubling from `first_s`, never above `most_s`."""

    first_s: float = 0.5
    most_s: float = 5.0


DEFAULT_REDIAL = Redial()


@dataclass(frozen=True, slots=True)
class Disconnected:
    """The connection ended; the next `next_event` redials."""

    reason: str


@dataclass(frozen=True, slots=True)
class Reconnected:
    """A new connection is open and everything held was asked for again."""

    greeting: Greeting


@dataclass(slots=True)
class TerminalHold:
    """The terminal this client is attached to, and what it asked of it."""

    seat: Seat
    id: int
    control: bool = False
    size: tuple[int, int] | None = None


SessionEvent = Frame | Disconnected | Reconnected


class ClientSession:
    """One client's hold on a supervisor across reconnects; `open` once, then read events."""

    def __init__(
        self,
        url: str,
        *,
        clock: Clock = SYSTEM_CLOCK,
        timing: ProbeTiming = DEFAULT_TIMING,
        redial: Redial = DEFAULT_REDIAL,
        open_timeout: float = OPEN_TIMEOUT_S,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.url = url
        self._tls = tls
        self.terminal: TerminalHold | None = None
        self.showing: Seat | None = None
        self._clock = clock
        self._timing = timing
        self._redial = redial
        self._open_timeout = open_timeout
        self._subjects: Counter[Subject] = Counter()
        self._connection: ForgeConnection | None = None
        self._down = False
        self._replayed: deque[SessionEvent] = deque()
        self.boot_id: str | None = None
        """The supervisor run this session talks to (home's `boot_id`): a terminal id means
        nothing to another run, which numbers its terminals from 1 again."""

    async def open(self) -> Greeting:
        """The first connection; raises SupervisorUnreachable at once (no redial)."""
        self._connection = await self._dial()
        try:
            self.boot_id = await _boot_of(self._connection)
        except ConnectionLost as lost:
            raise SupervisorUnreachable(self.url, f"no home snapshot ({lost.reason})") from None
        return self._connection.greeting

    @property
    def connection(self) -> ForgeConnection:
        """The open connection; ConnectionLost while it is down."""
        if self._connection is None:
            raise ConnectionLost("not open yet")
        if self._down:
            raise ConnectionLost(self._connection.lost or "reconnecting")
        return self._connection

    async def close(self) -> None:
        if self._connection is not None:
            await self._connection.close()

    # What the client holds.

    async def subscribe(self, what: Subject) -> dict[str, Any]:
        """Subscribe, and hold the subject for replays once the server accepted it."""
        data = await self.connection.subscribe(what)
        self._subjects[what] += 1
        return data

    async def unsubscribe(self, what: Subject) -> None:
        if self._subjects[what] <= 1:
            del self._subjects[what]
        else:
            self._subjects[what] -= 1
        await self.connection.unsubscribe(what)

    async def show(self, seat: Seat | None) -> None:
        self.showing = seat
        await self.connection.show(seat)

    async def view_terminal(self, seat: Seat, terminal: int | None = None) -> TerminalHold:
        """Attach as a viewer; `terminal` None opens the seat's terminal (created on first use)."""
        body = await self.connection.request(TerminalView(seat=seat, id=terminal))
        if not isinstance(body, dict) or not body.get("ok"):
            why = body.get("why") if isinstance(body, dict) else repr(body)
            raise ServerRefused("terminal_view", str(why))
        self.terminal = TerminalHold(seat, int(body["id"]))
        return self.terminal

    async def take_control(self) -> None:
        hold = self._hold("terminal_control")
        hold.control = True
        await self.connection.send(TerminalControl(seat=hold.seat, id=hold.id, take=True))

    async def resize(self, cols: int, rows: int) -> None:
        hold = self._hold("terminal_resize")
        hold.size = (cols, rows)
        await self.connection.send(TerminalResize(seat=hold.seat, id=hold.id, cols=cols, rows=rows))

    async def type(self, data: bytes) -> None:
        """Keystrokes for the attached terminal (kind 5)."""
        await self.connection.send_input(self._hold("terminal input").id, data)

    def _hold(self, what: str) -> TerminalHold:
        if self.terminal is None:
            raise ServerRefused(what, "no terminal is attached")
        return self.terminal

    # Events, and the reconnect between them.

    async def next_event(self) -> SessionEvent:
        """The next frame; `Disconnected` once when the link ends, then (after redialling and
        replaying) `Reconnected` and the snapshots the replay brought."""
        if self._replayed:
            return self._replayed.popleft()
        if self._down:
            return await self._reconnect()
        assert self._connection is not None
        try:
            return await self._connection.next_event()
        except ConnectionLost as lost:
            self._down = True
            log.info("client_disconnected", url=self.url, reason=lost.reason)
            return Disconnected(lost.reason)

    async def _reconnect(self) -> SessionEvent:
        delay = self._redial.first_s
        while True:
            try:
                connection = await self._dial()
                break
            except SupervisorUnreachable as error:
                log.info("client_redial_failed", url=self.url, why=error.why, retry_s=delay)
                await self._clock.sleep(delay)
                delay = min(delay * 2, self._redial.most_s)
        self._connection = connection
        self._down = False
        try:
            await self._replay(connection)
        except ConnectionLost as lost:
            self._replayed.clear()
            self._down = True
            return Disconnected(lost.reason)
        log.info("client_reconnected", url=self.url, subjects=len(self._subjects))
        return Reconnected(connection.greeting)

    async def _replay(self, connection: ForgeConnection) -> None:
        """Ask again for everything held, in the protocol's order (T21). A subject the new server
        refuses is let go (its error is an event); a terminal of another supervisor run is gone."""
        boot_id = await _boot_of(connection)
        restarted, self.boot_id = boot_id != self.boot_id, boot_id
        for what in list(self._subjects):
            try:
                data = await connection.subscribe(what)
            except ServerRefused as refused:
                del self._subjects[what]
                self._replayed.append(Error(what=refused.what, why=refused.why))
                continue
            self._replayed.append(Snapshot(subject=what, data=data))
        hold = self.terminal
        if hold is not None:
            if restarted:
                self.terminal = None
                raise ServerRefused(
                    "terminal_view", f"the supervisor restarted, so terminal {hold.id} is gone"
                )
            await self.view_terminal(hold.seat, hold.id)
            if hold.control:
                await self.take_control()
            if hold.size is not None:
                await self.resize(*hold.size)
        if self.showing is not None:
            await connection.show(self.showing)

    async def _dial(self) -> ForgeConnection:
        return await ForgeConnection.open(
            self.url,
            clock=self._clock,
            timing=self._timing,
            open_timeout=self._open_timeout,
            tls=self._tls,
        )


async def _boot_of(connection: ForgeConnection) -> str | None:
    """The run's `boot_id`, read from a home snapshot (subscribed, then let go)."""
    home = await connection.subscribe(HOME)
    await connection.unsubscribe(HOME)
    boot_id = home.get("boot_id")
    return boot_id if isinstance(boot_id, str) else None
