"""Socket access benchmark: the upgrade with a token, with TLS, and bulk frames over TLS, each
beside a bare websockets server with the same TLS context, in the same run.

    .venv/bin/python -P bench/socket.py [--quick]

(`-P`: this file is named like the stdlib module; it re-runs itself with -P if started without.)

Every server is its own process. forge's is the core `Supervisor` with the drill verbs and the
`SocketServer` (the path a connection takes: the origin check, the token read and compared, the
backoff lookup, the per-connection tasks, greeting and settings); the bare one is websockets'
asyncio server that sends one JSON frame on connect and answers the same drill requests with one
awaited `send` per frame. The TLS servers load the same certificate and key into
`ssl.SSLContext(PROTOCOL_TLS_SERVER)` with TLS 1.2 as the floor (forge's `ServerTls` also
re-reads the two files at each handshake, which is part of what is measured).

Rows: sequential upgrades (dial, upgrade, first frame, close) as connections/s, the median and
90th percentile time to the first frame, and the server process's CPU time per connection (user
plus system, from psutil: on a shared machine the wall clock measures the neighbours as much as
the server, CPU time much less); then one client reading `drill_stream` frames over wss:// as MB/s
and server CPU per MB. The best of three alternating runs is kept per server: other work slows
single runs, never speeds them up.
"""

# ruff: noqa: E402  (the stdlib imports below must follow the re-run with -P)
import os
import sys

SELF = os.path.abspath(__file__)
if sys.path and sys.path[0] == os.path.dirname(SELF):
    os.execv(sys.executable, [sys.executable, "-P", SELF, *sys.argv[1:]])

import argparse
import asyncio
import contextlib
import json
import logging
import platform
import socket
import ssl
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from forge.access.tls import CertPair, self_signed, trusting
from forge.client.auth import subprotocols
from forge.wire.binary import terminal_output

REPEATS = 3
WARM_DIALS = 50
"""Dials every server takes before any row is measured, so no row times a server's first
connections (its allocator and caches warming) against another's later ones."""
BULK_BYTES = 64 * 1024 * 1024
BULK_SIZES = (16 * 1024, 1024 * 1024)


def server_context(pair: CertPair) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(pair.cert, pair.key)
    return context


# --- the servers, each its own process ----------------------------------------------------


async def serve_forge(config: Path, port: int) -> None:
    from forge.config import load_config
    from forge.logs import configure
    from forge.supervisor.socket import drills
    from forge.supervisor.socket.core import Supervisor
    from forge.supervisor.socket.server import SocketServer

    configure(None, to_stderr=False)
    supervisor = Supervisor(load_config(config, overrides={"server.port": port}))
    drills.install(supervisor)
    server = SocketServer(supervisor)
    await server.start()
    print("ready", flush=True)
    await asyncio.Future()


async def serve_bare(port: int, pair: CertPair | None) -> None:
    """websockets' own server: a greeting on connect, the drill requests answered in place."""
    greeting = json.dumps({"kind": "greeting", "version": 29})

    async def handle(ws: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            await ws.send(greeting)
            async for message in ws:
                request = json.loads(message)
                if request["kind"] == "drill_listen":
                    await ws.send(json.dumps({"kind": "drill_done"}))
                elif request["kind"] == "drill_stream":
                    payload = bytes(request["size"])
                    for seq in range(1, request["count"] + 1):
                        await ws.send(terminal_output(terminal=1, seq=seq, data=payload))
                    await ws.send(json.dumps({"kind": "drill_done"}))

    logging.getLogger("websockets").setLevel(logging.CRITICAL)
    context = None if pair is None else server_context(pair)
    async with serve(handle, "127.0.0.1", port, ssl=context, compression=None, max_size=16 * 2**20):
        print("ready", flush=True)
        await asyncio.Future()


# --- the client ---------------------------------------------------------------------------


@dataclass
class Server:
    name: str
    url: str
    tls: ssl.SSLContext | None
    process: asyncio.subprocess.Process

    def cpu(self) -> float:
        times = psutil.Process(self.process.pid).cpu_times()
        return float(times.user + times.system)


async def upgrades(server: Server, count: int) -> tuple[float, list[float], float]:
    """Seconds for `count` sequential upgrades, each one's time to its first frame, and the
    server's CPU seconds over them."""
    firsts = []
    cpu = server.cpu()
    started = time.perf_counter()
    for _ in range(count):
        begun = time.perf_counter()
        async with connect(
            server.url, ssl=server.tls, subprotocols=subprotocols(), compression=None
        ) as ws:
            await ws.recv()
            firsts.append(time.perf_counter() - begun)
    return time.perf_counter() - started, firsts, server.cpu() - cpu


async def bulk(server: Server, size: int) -> tuple[float, float]:
    """Seconds from `drill_stream` to its last frame, on one wss:// client, and server CPU."""
    count = max(16, BULK_BYTES // size)
    async with connect(
        server.url, ssl=server.tls, subprotocols=subprotocols(), compression=None, max_size=None
    ) as ws:
        await ws.recv()
        await ws.send(json.dumps({"kind": "drill_listen"}))
        while json.loads(await ws.recv()).get("kind") != "drill_done":
            pass
        cpu = server.cpu()
        started = time.perf_counter()
        await ws.send(json.dumps({"kind": "drill_stream", "count": count, "size": size}))
        received = 0
        while received < count:
            if isinstance(await ws.recv(), bytes):
                received += 1
        return time.perf_counter() - started, server.cpu() - cpu


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def start(name: str, argv: list[str], url: str, tls: ssl.SSLContext | None) -> Server:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-P", SELF, *argv, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    if (await process.stdout.readline()).strip() != b"ready":
        raise SystemExit(f"the {name} server did not start")
    return Server(name, url, tls, process)


async def start_all(home: Path, pair: CertPair) -> dict[str, Server]:
    pinned = trusting(pair.cert)
    tls_toml = f'[server]\ntls_cert = "{pair.cert}"\ntls_key = "{pair.key}"\n'
    servers = {}
    for name, toml, tls in (
        ("forge ws, auth none", '[server]\nauth = "none"\n', None),
        ("forge ws, token", "", None),
        ("forge wss, token", tls_toml, pinned),
    ):
        config = home / f"{len(servers)}.toml"
        config.write_text(toml, encoding="utf-8")
        port = free_port()
        scheme = "ws" if tls is None else "wss"
        url = f"{scheme}://127.0.0.1:{port}/socket"
        servers[name] = await start(name, ["--serve-forge", str(config), str(port)], url, tls)
    for name, tls in (("bare ws", None), ("bare wss", pinned)):
        port = free_port()
        files = [] if tls is None else [str(pair.cert), str(pair.key)]
        argv = ["--serve-bare", str(port), *files]
        scheme = "ws" if tls is None else "wss"
        servers[name] = await start(name, argv, f"{scheme}://127.0.0.1:{port}/socket", tls)
    return servers


async def run(quick: bool) -> None:
    dials = 100 if quick else 400
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        os.environ["XDG_STATE_HOME"] = str(home / "state")  # the servers' token, read by clients
        pair, _ = self_signed(CertPair(home / "c.pem", home / "k.pem"), ["localhost", "127.0.0.1"])
        servers = await start_all(home, pair)
        try:
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
            print(f"# {platform.machine()}, {os.cpu_count()} CPUs, Python "
                  f"{platform.python_version()}, {when}, load average {load}")  # fmt: skip
            for server in servers.values():  # first dials warm allocators and caches
                await upgrades(server, WARM_DIALS)
            print(f"## upgrades: {dials} sequential dials, best of {REPEATS}")
            print(f"{'server':<20} {'conn/s':>8} {'first p50 ms':>13} {'first p90 ms':>13} "
                  f"{'ratio':>6} {'CPU ms/conn':>12} {'CPU ratio':>9}")  # fmt: skip
            for forge_name, bare_name in (
                ("forge ws, auth none", "bare ws"),
                ("forge ws, token", "bare ws"),
                ("forge wss, token", "bare wss"),
            ):
                best: dict[str, tuple[float, list[float]]] = {}
                cpus: dict[str, float] = {}
                for _ in range(REPEATS):
                    for name in (bare_name, forge_name):
                        seconds, firsts, cpu = await upgrades(servers[name], dials)
                        if name not in best or seconds < best[name][0]:
                            best[name] = (seconds, firsts)
                        cpus[name] = min(cpus.get(name, cpu), cpu)
                for name in (forge_name, bare_name):
                    seconds, firsts = best[name]
                    deciles = statistics.quantiles(firsts, n=10)
                    ratio = best[bare_name][0] / seconds
                    median = statistics.median(firsts)
                    per_conn = cpus[name] / dials
                    print(f"{name:<20} {dials / seconds:>8,.0f} {median * 1e3:>13.2f} "
                          f"{deciles[8] * 1e3:>13.2f} {ratio:>6.2f} {per_conn * 1e3:>12.2f} "
                          f"{cpus[bare_name] / cpus[name]:>9.2f}")  # fmt: skip
            mebibytes = BULK_BYTES // 2**20
            print(f"## bulk over wss://: {mebibytes} MiB to one client, best of {REPEATS}")
            print(f"{'size':>8} {'forge MB/s':>11} {'bare MB/s':>10} {'ratio':>6} "
                  f"{'forge CPU ms/MB':>16} {'bare CPU ms/MB':>15} {'CPU ratio':>9}")  # fmt: skip
            for size in BULK_SIZES:
                times = {"forge wss, token": float("inf"), "bare wss": float("inf")}
                spent = dict.fromkeys(times, float("inf"))
                for _ in range(REPEATS):
                    for name in times:
                        seconds, cpu = await bulk(servers[name], size)
                        times[name], spent[name] = min(times[name], seconds), min(spent[name], cpu)
                megabytes = max(16, BULK_BYTES // size) * size / 1e6
                forge_rate = megabytes / times["forge wss, token"]
                bare_rate = megabytes / times["bare wss"]
                forge_cpu = spent["forge wss, token"] / megabytes * 1e3
                bare_cpu = spent["bare wss"] / megabytes * 1e3
                print(f"{size:>8} {forge_rate:>11,.1f} {bare_rate:>10,.1f} "
                      f"{forge_rate / bare_rate:>6.2f} {forge_cpu:>16.2f} {bare_cpu:>15.2f} "
                      f"{bare_cpu / forge_cpu:>9.2f}")  # fmt: skip
        finally:
            for server in servers.values():
                server.process.terminate()
                await server.process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the dials")
    parser.add_argument(
        "--serve-forge", nargs=2, metavar=("CONFIG", "PORT"), help=argparse.SUPPRESS
    )
    parser.add_argument("--serve-bare", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_forge:
        os.environ.setdefault("FORGE_SUPERVISOR_DRILLS", "1")
        asyncio.run(serve_forge(Path(args.serve_forge[0]), int(args.serve_forge[1])))
    elif args.serve_bare:
        port, *files = args.serve_bare
        pair = CertPair(Path(files[0]), Path(files[1])) if files else None
        asyncio.run(serve_bare(int(port), pair))
    else:
        asyncio.run(run(args.quick))


if __name__ == "__main__":
    main()
