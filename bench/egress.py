"""Egress: the proxy's cost beside a direct connection, and a sandboxed start with its port.

    .venv/bin/python -P bench/egress.py [--quick]

Round trips on loopback, each pair measured side by side in one run, alternating blocks:
- `tunnel`: 64 B sent and echoed back through an open CONNECT tunnel, beside a direct
  connection to the same echo server (what every exchange of a TLS session pays);
- `connect`: a new connection per exchange (TCP connect, CONNECT and its 200, 64 B echoed),
  beside a new direct connection and the same echo (what each new TLS connection pays, before
  its handshake);
- `http`: a plain GET answered `ok` and closed (the proxy judges it and opens its own upstream
  connection), beside the same GET sent to the server directly;
- `64 KiB`: 64 KiB echoed through an open tunnel, beside direct (bulk).
The echo and HTTP servers and the proxy run in a child process on forge's event loop (uvloop),
as in an attempt runner; the proxy's resolver maps `public.example` to a stand-in global
address and its connector sends that to the loopback servers: no packet leaves loopback.

`start`: `bwrap ... true` in a network namespace of its own, with and without the launcher that
opens the proxy's port in it (`EgressProxy.wrap`), alternating; wall time per start. Beside it,
where socat is installed, the design not taken: a socat forwarder started inside the sandbox
before the command (`SOCAT_INSIDE`).

Prints the median of each (and the 90th percentile), and the ratio proxy / direct.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from forge import eventloop, logs
from forge.attempt.egress.policy import IPAddress, public_policy
from forge.attempt.egress.proxy import EgressProxy, Streams
from forge.attempt.sandbox import Sandbox, args_fd, probe

STAND_IN = ipaddress.ip_address("1.2.3.4")
SMALL = b"x" * 64
BULK = b"y" * 65536
HTTP_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"


# -- the child: servers and proxy ----------------------------------------------------------------


async def serve() -> None:
    """Echo and HTTP servers, the proxy on a loopback port and its control socket; their ports
    (and the launcher's prefix) on stdout as one JSON line; until stdin closes."""

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()

    async def http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(HTTP_ANSWER)
        await writer.drain()
        writer.close()

    echo_server = await asyncio.start_server(echo, "127.0.0.1", 0)
    http_server = await asyncio.start_server(http, "127.0.0.1", 0)
    routes = {443: port_of(echo_server), 80: port_of(http_server)}

    async def resolver(host: str, port: int) -> list[IPAddress]:
        return [STAND_IN] if host == "public.example" else []

    async def connector(address: IPAddress, port: int) -> Streams:
        return await asyncio.open_connection("127.0.0.1", routes[port])

    proxy = EgressProxy(public_policy(own=()), resolver=resolver, connector=connector)
    await proxy.start()
    listener = socket.create_server(("127.0.0.1", 0))
    proxy_port = listener.getsockname()[1]
    await proxy.serve(listener)
    print(
        json.dumps(
            {"echo": routes[443], "http": routes[80], "proxy": proxy_port, "wrap": proxy.wrap([])}
        ),
        flush=True,
    )
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await proxy.stop()


def port_of(server: asyncio.Server) -> int:
    return int(server.sockets[0].getsockname()[1])


# -- the parent: clients ----------------------------------------------------------------------


def exchange(sock: socket.socket, data: bytes) -> None:
    sock.sendall(data)
    left = len(data)
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise ConnectionError("the echo ended early")
        left -= len(chunk)


def open_tunnel(proxy: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", proxy))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(b"CONNECT public.example:443 HTTP/1.1\r\nHost: public.example:443\r\n\r\n")
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += sock.recv(1)
    if not head.startswith(b"HTTP/1.1 200"):
        raise ConnectionError(head.decode(errors="replace"))
    return sock


def open_direct(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_to_end(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def timed(action: Callable[[], object], count: int) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return samples


Pairs = dict[str, tuple[Callable[[], object], Callable[[], object]]]


def pairs(ports: dict[str, int], held: list[socket.socket]) -> Pairs:
    """Each measure's (proxy, direct) actions; the connections they keep open go to `held`."""
    tunnel, direct = open_tunnel(ports["proxy"]), open_direct(ports["echo"])
    bulk_tunnel, bulk_direct = open_tunnel(ports["proxy"]), open_direct(ports["echo"])
    held += [tunnel, direct, bulk_tunnel, bulk_direct]

    def connect_tunnel() -> None:
        with open_tunnel(ports["proxy"]) as sock:
            exchange(sock, SMALL)

    def connect_direct() -> None:
        with open_direct(ports["echo"]) as sock:
            exchange(sock, SMALL)

    def get(port: int, target: bytes) -> None:
        with open_direct(port) as sock:
            head = b" HTTP/1.1\r\nHost: public.example\r\nConnection: close\r\n\r\n"
            sock.sendall(b"GET " + target + head)
            if not read_to_end(sock).endswith(b"ok"):
                raise ConnectionError("no answer")

    return {
        "tunnel 64 B": (lambda: exchange(tunnel, SMALL), lambda: exchange(direct, SMALL)),
        "connect + 64 B": (connect_tunnel, connect_direct),
        "http GET": (
            lambda: get(ports["proxy"], b"http://public.example/x"),
            lambda: get(ports["http"], b"/x"),
        ),
        "tunnel 64 KiB": (lambda: exchange(bulk_tunnel, BULK), lambda: exchange(bulk_direct, BULK)),
    }


SOCAT_INSIDE = (
    "socat TCP-LISTEN:3128,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:/tmp/egress.sock & f=$!; "
    "while ! grep -q ':0C38 00000000:0000 0A' /proc/net/tcp; do :; done; "
    "true; kill $f; wait $f || true"
)
"""The design not taken, for its start: a forwarder started inside the sandbox before the
command (listening, polled until it is), killed after it."""


def start_pairs(wrap: list[str]) -> Pairs:
    """`true` started in the sandbox with its port beside without; and, where socat is
    installed, with a forwarder inside instead beside without."""
    found = probe(os.environ)
    if found.program is None:
        raise SystemExit(f"bubblewrap cannot run here: {found.reason}")
    box = Sandbox.for_attempt(found.program, hidden=(), mounts=())

    def run(command: list[str], prefix: list[str]) -> None:
        fd = args_fd(box.args_bytes(command, Path("/")))
        try:
            subprocess.run([*prefix, *box.argv(command, fd)], pass_fds=(fd,), check=True)
        finally:
            os.close(fd)

    pairs = {"start (bwrap true)": (lambda: run(["true"], wrap), lambda: run(["true"], []))}
    if shutil.which("socat"):
        pairs["start, socat inside"] = (
            lambda: run(["sh", "-c", SOCAT_INSIDE], []),
            lambda: run(["true"], []),
        )
    return pairs


def describe(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.9) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        logs.configure(None, to_stderr=False)
        eventloop.run(serve())
        return
    rounds, per_round, starts = (2, 50, 10) if args.quick else (6, 400, 60)
    child = subprocess.Popen(
        [sys.executable, "-P", __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdin is not None
    held: list[socket.socket] = []
    try:
        ports = json.loads(child.stdout.readline())
        actions = pairs(ports, held)
        actions |= start_pairs(ports["wrap"])
        results: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in actions}
        for _ in range(rounds):
            for name, (through, direct) in actions.items():
                count = max(2, starts // rounds) if name.startswith("start") else per_round
                results[name][0].extend(timed(through, count))
                results[name][1].extend(timed(direct, count))
    finally:
        for sock in held:
            sock.close()
        child.stdin.close()
        child.wait()
    print(
        f"{'measure':<20} {'n':>5} {'proxy med':>10} {'direct med':>11} {'ratio':>6}"
        f" {'proxy p90':>10} {'direct p90':>11}"
    )
    for name, (through, direct) in results.items():
        (pm, p90), (dm, d90) = describe(through), describe(direct)
        print(
            f"{name:<20} {len(through):>5} {pm * 1e3:>8.3f}ms {dm * 1e3:>9.3f}ms {pm / dm:>6.2f}"
            f" {p90 * 1e3:>8.3f}ms {d90 * 1e3:>9.3f}ms"
        )


if __name__ == "__main__":
    main()
