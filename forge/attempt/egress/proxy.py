"""The egress proxy: one per attempt, the only way out of its sandboxed commands.

Each sandboxed command runs in a network namespace of its own, where `port` opens
`127.0.0.1:PROXY_PORT` from outside and hands the listening socket here over the control socket;
the proxy serves it until that command's bubblewrap exits. A client in the sandbox reaches it
through the variables of `proxy_env` and asks in HTTP/1.1 (h11 parses every message):
- `CONNECT host:port` (what `HTTPS_PROXY` clients send for TLS): judged, then a byte tunnel;
- `GET http://host:port/path` and the other methods on an absolute URL (plain `http://`): judged
  per request, forwarded on an upstream connection of its own.
A destination is screened by the policy before any lookup, a name is resolved here (never in the
sandbox, which has no resolver) and judged on its addresses, and the proxy connects to exactly
the addresses it admitted. Every decision goes to `log`. Anything else a client sends gets a
400; a refused destination a 403 naming the reason; one admitted but not reached a 502.

The control socket is abstract (a random name in this machine's network namespace): the
sandbox, in a namespace of its own, cannot reach it, and a peer of another user is refused.
The resolver and the connector are injected, so tests judge names that resolve to LAN or public
addresses without a packet leaving loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import os
import secrets
import socket
import struct
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus

import h11
import psutil

import forge.attempt.egress.port as port_module
from forge.attempt.egress.headers import request_headers, response_headers
from forge.attempt.egress.log import EgressLog, Outcome
from forge.attempt.egress.policy import (
    BadDestination,
    Destination,
    IPAddress,
    Policy,
    judge,
    parse_authority,
    parse_proxy_url,
    public_policy,
    screen,
)
from forge.children import ExitWatch
from forge.logs import get_logger

PROXY_PORT = 3128
"""The port inside each sandbox (its network namespace is its own, so it is always free)."""
CONNECT_TIMEOUT_S = 30.0
CHUNK = 65536
PROBE_TIMEOUT_S = 30.0
MAX_CONNECTIONS = 256
"""Client connections open at once through one proxy (each holds two descriptors here); one
more is closed unanswered and counted, so a recipe cannot exhaust its runner's descriptors."""
MAX_HEAD_BYTES = 64 * 1024
"""A request or response head larger than this is refused (h11's bound on an incomplete event)."""

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Resolver = Callable[[str, int], Awaitable[Sequence[IPAddress]]]
"""A name's addresses, in the order to try them; empty when it does not resolve."""
Connector = Callable[[IPAddress, int], Awaitable[Streams]]
"""A TCP connection to exactly this address."""

log = get_logger(__name__)


async def resolve(host: str, port: int) -> list[IPAddress]:
    """The system resolver's addresses for `host`, each once, in its order."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    addresses: list[IPAddress] = []
    for *_, sockaddr in infos:
        address = ipaddress.ip_address(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


async def connect(address: IPAddress, port: int) -> Streams:
    return await asyncio.open_connection(str(address), port)


def machine_addresses() -> frozenset[IPAddress]:
    """Every address of this machine's interfaces: a public one still reaches its services."""
    found: set[IPAddress] = set()
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            if entry.family in (socket.AF_INET, socket.AF_INET6):
                found.add(ipaddress.ip_address(entry.address.split("%")[0]))
    return frozenset(found)


async def probe_port(bwrap_argv: Sequence[str]) -> str | None:
    """Whether this machine lets forge open a sandbox's port: None, or why not. `bwrap_argv`
    runs `true` in the sandbox's namespaces (the port needs a user namespace forge may enter:
    not a setuid bubblewrap's)."""
    proxy = EgressProxy(public_policy(own=()))
    await proxy.start()
    try:
        process = await asyncio.create_subprocess_exec(
            *proxy.wrap(bwrap_argv),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await process.communicate()
        if process.returncode != 0:
            lines = err.decode(errors="replace").strip().splitlines()
            return lines[0] if lines else f"the sandbox exited {process.returncode}"
        # Sent before the command ran, so it is on its way.
        await asyncio.wait_for(proxy._port_opened.wait(), PROBE_TIMEOUT_S)
        return None
    finally:
        await proxy.stop()


def proxy_env(port: int = PROXY_PORT, *, routed: Policy | None = None) -> dict[str, str]:
    """What a sandboxed command is given so that its clients use the proxy: both spellings
    (curl reads only the lowercase `http_proxy`), loopback exempt (the command's own test
    servers) unless `routed`'s allow-list names it (the host's server, reached only through the
    proxy), and Node's switch to honour them (Node 24 and later)."""
    url = f"http://127.0.0.1:{port}"
    env = {name: url for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
    env |= {name.lower(): url for name in env}
    listed = {d.host for d in routed.allowed or ()} if routed is not None else set()
    exempt = [host for host in ("localhost", "127.0.0.1", "::1") if host not in listed]
    env["NO_PROXY"] = env["no_proxy"] = ",".join(exempt)
    env["NODE_USE_ENV_PROXY"] = "1"
    return env


@dataclass(eq=False)
class _Port:
    """One listening socket the proxy serves, and the client connections it accepted."""

    server: asyncio.Server | None = None
    clients: set[asyncio.Task[None]] = field(default_factory=set)
    watch: ExitWatch | None = None

    def close(self) -> None:
        if self.watch is not None:
            self.watch.close()
        if self.server is not None:
            self.server.close()
        for task in self.clients:
            task.cancel()


@dataclass
class _Side:
    """One end of a proxied HTTP exchange: h11's state for it and its streams."""

    conn: h11.Connection
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def next_event(self) -> h11.Event | type[h11.PAUSED]:
        """The next event, reading as h11 needs (PAUSED: a request came before its turn)."""
        while True:
            event = self.conn.next_event()
            if isinstance(event, h11.Event):
                return event
            if event is h11.PAUSED:
                return h11.PAUSED
            self.conn.receive_data(await self.reader.read(CHUNK))

    async def send(self, *events: h11.Event) -> None:
        for event in events:
            data = self.conn.send(event)
            if data:
                self.writer.write(data)
        await self.writer.drain()


@dataclass(frozen=True)
class _Unreached:
    """Why a destination was not connected: the HTTP status and the text for the client."""

    status: int
    text: str


class EgressProxy:
    """An attempt's proxy: `start` before its first sandboxed command, `stop` after its last."""

    def __init__(
        self,
        policy: Policy,
        *,
        resolver: Resolver = resolve,
        connector: Connector = connect,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.policy = policy
        self.max_connections = max_connections
        self.log = EgressLog(policy.name)
        self._resolve = resolver
        self._connect = connector
        self._control: socket.socket | None = None
        self._control_name = f"forge-egress-{secrets.token_hex(16)}"
        self._accepting: asyncio.Task[None] | None = None
        self._ports: set[_Port] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._port_opened = asyncio.Event()

    # -- the attempt's side ------------------------------------------------------------------

    async def start(self) -> None:
        control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        control.bind(b"\0" + self._control_name.encode())
        control.listen(64)
        control.setblocking(False)
        self._control = control
        self._accepting = asyncio.create_task(self._accept_ports(control))

    async def stop(self) -> None:
        """Close the control socket, every port and every connection through them."""
        if self._accepting is not None:
            self._accepting.cancel()
            await asyncio.gather(self._accepting, return_exceptions=True)
        if self._control is not None:
            self._control.close()
        tasks = [*self._tasks, *(t for p in self._ports for t in p.clients)]
        for port in list(self._ports):
            self._close(port)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def wrap(self, bwrap_argv: Sequence[str]) -> list[str]:
        """The command line that runs `bwrap_argv` with this proxy's port open in its sandbox."""
        # By path, isolated and without site: the launcher needs only the standard library, and
        # an interpreter that skips the site's path hooks starts in half the time.
        return [
            sys.executable,
            "-I",
            "-S",
            port_module.__file__,
            self._control_name,
            str(PROXY_PORT),
            *bwrap_argv,
        ]

    async def serve(
        self, listener: socket.socket, *, until_exit: tuple[int, int] | None = None
    ) -> None:
        """Serve clients on `listener` (a listening TCP socket, which the proxy then owns) until
        `stop`, or until the process `until_exit` names (its pid and a pidfd, then owned here)
        exits."""
        port = _Port()
        port.server = await asyncio.start_server(
            functools.partial(self._client_task, port), sock=listener
        )
        self._ports.add(port)
        if until_exit is not None:
            port.watch = ExitWatch(until_exit[0], lambda: self._close(port), pidfd=until_exit[1])

    def _close(self, port: _Port) -> None:
        port.close()
        self._ports.discard(port)

    async def _accept_ports(self, control: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            conn, _ = await loop.sock_accept(control)
            self._spawn(self._receive_port(conn))

    def _spawn(self, coroutine: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _receive_port(self, conn: socket.socket) -> None:
        """One command's port from `port`: a listening socket and a pidfd of its bubblewrap.
        Anything else is closed and logged (only a process of this user can send it)."""
        with conn:
            uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
            if uid != os.getuid():
                log.warning("egress_control_refused", uid=uid)
                return
            data, fds = await _receive_fds(conn)
        if not data and not fds:
            return  # the launcher failed after connecting, and says why on the command's stderr
        listener = _listening(fds[0]) if len(fds) == 2 and data.strip().isdigit() else None
        if listener is None:
            for fd in fds:
                os.close(fd)
            log.warning("egress_control_malformed", descriptors=len(fds), text=data[:64])
            return
        await self.serve(listener, until_exit=(int(data), fds[1]))
        self._port_opened.set()

    # -- a client in the sandbox -------------------------------------------------------------

    async def _client_task(
        self, port: _Port, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        if sum(len(p.clients) for p in self._ports) >= self.max_connections:
            self._note("*", "refused", f"more than {self.max_connections} connections at once")
            writer.close()
            return
        port.clients.add(task)
        try:
            await self._client(_Side(h11.Connection(h11.SERVER, MAX_HEAD_BYTES), reader, writer))
        except (OSError, h11.ProtocolError):
            pass
        except asyncio.CancelledError:
            # Its port closed. Ended, not cancelled: asyncio's streams callback (3.11) would
            # raise the cancellation again when it asks this task for its exception.
            pass
        finally:
            port.clients.discard(task)
            writer.close()

    async def _client(self, client: _Side) -> None:
        """Requests on one client connection until it closes or one ends it."""
        while True:
            try:
                event = await client.next_event()
            except h11.RemoteProtocolError as error:
                await _answer(client, error.error_status_hint, f"not an HTTP request: {error}")
                return
            if not isinstance(event, h11.Request):
                return
            target = event.target.decode("ascii", "replace")
            if event.method == b"CONNECT":
                await self._tunnel(client, target)
                return
            if not await self._forward(client, event, target):
                return
            if client.conn.our_state is not h11.DONE or client.conn.their_state is not h11.DONE:
                return
            client.conn.start_next_cycle()

    async def _tunnel(self, client: _Side, target: str) -> None:
        await client.next_event()  # a CONNECT's end of message (it has no body)
        try:
            dest = parse_authority(target)
        except BadDestination as error:
            self._note(target, "refused", str(error))
            await _answer(client, 400, str(error))
            return
        opened = await self._open(dest)
        if isinstance(opened, _Unreached):
            await _answer(client, opened.status, opened.text)
            return
        up_reader, up_writer = opened
        try:
            await client.send(
                h11.Response(status_code=200, headers=[], reason=b"Connection established")
            )
            early, _ = client.conn.trailing_data
            if early:
                up_writer.write(early)
            await relay(client.reader, client.writer, up_reader, up_writer)
        finally:
            up_writer.close()

    async def _forward(self, client: _Side, request: h11.Request, target: str) -> bool:
        """One plain request; False when the client's connection must end (h11's states say
        whether it may carry another after a True)."""
        try:
            dest, path = parse_proxy_url(target)
        except BadDestination as error:
            self._note(target, "refused", str(error))
            await _answer(client, 400, str(error))
            return False
        opened = await self._open(dest)
        if isinstance(opened, _Unreached):
            await _answer(client, opened.status, opened.text)
            return False
        upstream = _Side(h11.Connection(h11.CLIENT, MAX_HEAD_BYTES), *opened)
        try:
            await upstream.send(
                h11.Request(
                    method=request.method,
                    target=path.encode("ascii"),
                    headers=request_headers(request.headers, dest),
                )
            )
            # A server may answer before it has read the whole body: the body stops there.
            body = asyncio.create_task(_pump_body(client, upstream))
            try:
                await _pump_response(upstream, client)
            finally:
                body.cancel()
                await asyncio.gather(body, return_exceptions=True)
        except (ConnectionError, h11.ProtocolError) as error:
            if client.conn.our_state is h11.SEND_RESPONSE:
                self._note(str(dest), "failed", f"the upstream answer broke off: {error}")
                await _answer(client, 502, f"{dest}: the upstream answer broke off")
            return False
        finally:
            upstream.writer.close()
        return True

    async def _open(self, dest: Destination) -> Streams | _Unreached:
        """Judge `dest` (before resolving where the policy can), then connect to an admitted
        address; every outcome is noted."""
        decision = screen(self.policy, dest)
        if decision is None:
            addresses = await self._resolve(dest.host, dest.port)
            if not addresses:
                self._note(str(dest), "failed", "the name did not resolve")
                return _Unreached(502, f"{dest}: the name did not resolve")
            decision = judge(self.policy, addresses)
        if not decision.admitted:
            self._note(str(dest), "refused", decision.reason)
            return _Unreached(403, f"forge egress refused {dest}: {decision.reason}")
        error: BaseException | None = None
        for address in decision.addresses:
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT_S):
                    streams = await self._connect(address, dest.port)
            except (OSError, TimeoutError) as failure:
                error = failure
                continue
            kind = "listed loopback" if address.is_loopback else "public"
            self._note(str(dest), "admitted", f"{kind} address {address}")
            return streams
        reason = f"no connection to {', '.join(map(str, decision.addresses))}: {error!r}"
        self._note(str(dest), "failed", reason)
        return _Unreached(502, f"{dest}: {reason}")

    def _note(self, destination: str, outcome: Outcome, reason: str) -> None:
        """Into the record; into forge's log the first time only (a recipe that dials in a loop
        must not flood it)."""
        if self.log.note(destination, outcome, reason):
            log.info("egress", destination=destination, decision=outcome, reason=reason)


def _listening(fd: int) -> socket.socket | None:
    """The listening TCP socket `fd` is (then owned by the result), or None (`fd` left open)."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError:
        return None
    if sock.family == socket.AF_INET and sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        return sock
    sock.detach()
    return None


async def _receive_fds(conn: socket.socket) -> tuple[bytes, list[int]]:
    """The one message `port` sends: its text and file descriptors (nothing at end of stream)."""
    conn.setblocking(False)
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(conn, 64, 2)
        except BlockingIOError:
            await _readable(conn.fileno())
            continue
        return data, fds


async def _readable(fd: int) -> None:
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await ready
    finally:
        loop.remove_reader(fd)


async def _pump_body(client: _Side, upstream: _Side) -> None:
    """The client's request body, upstream."""
    while True:
        event = await client.next_event()
        if isinstance(event, h11.Data):
            await upstream.send(h11.Data(data=event.data))
        elif isinstance(event, h11.EndOfMessage):
            await upstream.send(h11.EndOfMessage())
            return
        else:
            raise ConnectionResetError("the client left in the middle of its request")


async def _pump_response(upstream: _Side, client: _Side) -> None:
    """The upstream response (interim ones included), to the client. Its body goes on in one
    write per read from upstream, however many chunks that read held (a streamed reply is
    many small events: one write each would double the proxy's system calls)."""
    held: list[bytes] = []
    while True:
        event = upstream.conn.next_event()
        if event is h11.NEED_DATA:
            await _flush(client, held)
            upstream.conn.receive_data(await upstream.reader.read(CHUNK))
            continue
        if isinstance(event, h11.Data):
            held.append(client.conn.send(h11.Data(data=event.data)) or b"")
            continue
        await _flush(client, held)
        if isinstance(event, h11.InformationalResponse):
            await client.send(
                h11.InformationalResponse(
                    status_code=event.status_code, headers=response_headers(event.headers)
                )
            )
        elif isinstance(event, h11.Response):
            await client.send(
                h11.Response(
                    status_code=event.status_code,
                    headers=response_headers(event.headers),
                    reason=event.reason,
                )
            )
        elif isinstance(event, h11.EndOfMessage):
            await client.send(h11.EndOfMessage())
            return
        else:
            raise ConnectionResetError("the upstream server closed before its response ended")


async def _flush(client: _Side, held: list[bytes]) -> None:
    """What `_pump_response` holds, to the client in one write."""
    if held:
        client.writer.write(b"".join(held))
        held.clear()
        await client.writer.drain()


async def _answer(client: _Side, status: int, text: str) -> None:
    """The proxy's own response (an error), then the client's connection ends."""
    body = f"{text}\n".encode()
    with contextlib.suppress(h11.LocalProtocolError, ConnectionError):
        await client.send(
            h11.Response(
                status_code=status,
                headers=[
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
                reason=HTTPStatus(status).phrase.encode(),
            ),
            h11.Data(data=body),
            h11.EndOfMessage(),
        )


async def relay(
    a_reader: asyncio.StreamReader,
    a_writer: asyncio.StreamWriter,
    b_reader: asyncio.StreamReader,
    b_writer: asyncio.StreamWriter,
) -> None:
    """Bytes both ways until both ends have finished sending (half-closes passed on); an error
    on either side ends both."""

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()

    pumps = [
        asyncio.create_task(pump(a_reader, b_writer)),
        asyncio.create_task(pump(b_reader, a_writer)),
    ]
    try:
        done, _ = await asyncio.wait(pumps, return_when=asyncio.FIRST_EXCEPTION)
        if any(not t.cancelled() and t.exception() is not None for t in done):
            a_writer.close()
            b_writer.close()
    finally:
        for task in pumps:
            task.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
