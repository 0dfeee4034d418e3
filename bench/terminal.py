"""Terminal benchmark: forge's whole terminal path beside terminado and the raw PTY floor.

    .venv/bin/pip install -e '.[bench]'   # once: terminado, for the side-by-side
    .venv/bin/python bench/terminal.py [--mb 40] [--keys 200] [--stall 10] [--repeats 3]

Six ways of moving the same shell's output, measured in one run, alternating:
- raw floor: ptyprocess runs the workload and this process reads the PTY into nothing;
- relay floor: the same, each read written to a loopback TCP socket another process drains
  (the least any server that sends a PTY to a socket client can do);
- unix-socket and two-process floors: the relay split as forge is, a PTY reader batching up to
  64 KiB into a plain unix socket, or into ZeroMQ ipc, and a second process writing to TCP
  (forge's shape with none of its work; the second shows what ZeroMQ adds to the hop);
- forge: a supervisor process (socket, `forge.supervisor.terminal.service`) with its terminal host
  worker, read by a websockets client (PTY -> host -> ZeroMQ -> supervisor -> WebSocket);
- terminado: tornado + terminado's `TermSocket` in its own process, read the same way.
The same shell (`bash --noprofile --norc -i`) runs the same keystrokes in each. Printed: flood
throughput (`head -c N /dev/zero | tr '\\0' x`) and its ratio to the floor, server CPU seconds
per MB moved (forge: supervisor + host; terminado: its process), forge's average frame under
flood, keystroke echo latency p50/p99, bytes lost when the shell exits right after printing,
and what a 10 s stalled viewer costs the supervisor (memory growth, CPU).
"""

from __future__ import annotations

import sys

# bench/ holds socket.py: keep this folder off sys.path so `import socket` is the stdlib's.
if sys.path[0] == __file__.rpartition("/")[0]:
    sys.path.pop(0)

import argparse
import asyncio
import functools
import json
import os
import platform
import socket
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from ptyprocess import PtyProcess
from websockets.asyncio.client import ClientConnection, connect

from forge.client.auth import subprotocols
from forge.wire.binary import TERMINAL_OUTPUT_HEADER, terminal_input

SHELL = ["/bin/bash", "--noprofile", "--norc", "-i"]
SEAT = {"org": "bench", "project": "terminal", "label": "main"}
MARK_COMMAND = "echo D''ONE"
"""Typed after a workload: the echo of the line holds `D''ONE`, only the output holds DONE."""
MARK = b"DONE\r\n"


def workload(megabytes: int) -> str:
    return f"head -c {megabytes * 1_000_000} /dev/zero | tr '\\0' x"


def flood_command(megabytes: int) -> str:
    return f"{workload(megabytes)}; {MARK_COMMAND}"


# --- the servers, each run as its own process -------------------------------------------


async def serve_forge(port: int, project: Path) -> None:
    from forge import logs
    from forge.config import load_config
    from forge.ipc.manager import WorkerManager
    from forge.supervisor.socket.core import Supervisor
    from forge.supervisor.socket.server import SocketServer
    from forge.supervisor.terminal.service import install

    logs.configure(None, to_stderr=False)
    toml = project / "forge.toml"
    toml.write_text(f'[[projects]]\norg = "bench"\nname = "terminal"\npath = "{project}"\n')
    supervisor = Supervisor(load_config(toml, overrides={"server.port": port}))
    async with WorkerManager(runtime_dir=project / "run") as manager:
        install(supervisor, manager, host_config={"argv": SHELL})
        server = SocketServer(supervisor)
        await server.start()
        print("ready", flush=True)
        await asyncio.Event().wait()


def serve_terminado(port: int) -> None:
    import tornado.ioloop
    import tornado.web
    from terminado import TermSocket, UniqueTermManager

    manager = UniqueTermManager(shell_command=SHELL)
    app = tornado.web.Application([(r"/websocket", TermSocket, {"term_manager": manager})])
    app.listen(port, "127.0.0.1")
    print("ready", flush=True)
    tornado.ioloop.IOLoop.current().start()


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    url: str

    def cpu_seconds(self) -> float:
        """The server's own CPU (forge: supervisor and terminal hosts; never the workload)."""
        total = 0.0
        for proc in [psutil.Process(self.process.pid), *self._hosts()]:
            try:
                times = proc.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return total

    def rss(self) -> int:
        return int(psutil.Process(self.process.pid).memory_info().rss)

    def _hosts(self) -> list[psutil.Process]:
        children = psutil.Process(self.process.pid).children()
        return [c for c in children if "forge.workers.terminal" in " ".join(c.cmdline())]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def start_server(kind: str, home: Path) -> Server:
    port = free_port()
    argv = [sys.executable, "-P", __file__, f"--serve-{kind}", str(port), str(home)]
    os.environ["XDG_STATE_HOME"] = str(home / "state")  # where forge's clients read the token
    env = {**os.environ, "PS1": "$ ", "HOME": str(home)}
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env)
    assert process.stdout is not None
    if process.stdout.readline().strip() != b"ready":
        raise SystemExit(f"the {kind} server did not start")
    path = "/socket" if kind == "forge" else "/websocket"
    return Server(kind, process, f"ws://127.0.0.1:{port}{path}")


# --- clients speaking each protocol ------------------------------------------------------


@dataclass
class Received:
    data_bytes: int = 0
    frames: int = 0
    tail: bytes = b""
    zs: int = 0
    """Z bytes seen (the exit test prints Zs; no prompt or echo holds one)."""
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, message: bytes, start: int = 0) -> None:
        """Count `message[start:]` without copying it (the client shares the servers' CPUs)."""
        self.data_bytes += len(message) - start
        self.frames += 1
        self.tail = (self.tail + message[max(start, len(message) - 4096) :])[-4096:]
        self.zs += message.count(b"Z", start)


class ForgeClient:
    def __init__(self, ws: ClientConnection, terminal: int) -> None:
        self.ws = ws
        self.terminal = terminal

    @classmethod
    async def open(
        cls, url: str, *, subscribe: bool = False, control: bool = True, **kwargs: Any
    ) -> ForgeClient:
        """Attach to the seat's terminal; by default take control, as a person typing does
        (the controller paces the shell; a watcher that falls behind is dropped to a view)."""
        ws = await connect(
            url, max_size=None, compression=None, subprotocols=subprotocols(), **kwargs
        )
        await ws.send(json.dumps({"kind": "terminal_view", "seat": SEAT, "reply_to": 1}))
        terminal = 0
        while True:
            message = await ws.recv()
            if isinstance(message, str):
                frame = json.loads(message)
                if frame["kind"] == "reply":
                    if not frame["body"]["ok"]:
                        raise SystemExit(f"terminal_view refused: {frame['body']['why']}")
                    terminal = frame["body"]["id"]
                if frame["kind"] == "terminal_view":
                    break
        if subscribe:
            await ws.send(json.dumps({"kind": "subscribe", "what": {"session": SEAT}}))
        if control:
            take = {"kind": "terminal_control", "seat": SEAT, "id": terminal, "take": True}
            await ws.send(json.dumps(take))
        return cls(ws, terminal)

    async def type(self, keys: str) -> None:
        await self.ws.send(terminal_input(terminal=self.terminal, data=keys.encode()))

    async def until(self, done: Callable[[Received], bool]) -> Received:
        received = Received()
        while not done(received):
            message = await self.ws.recv()
            if isinstance(message, str):
                frame = json.loads(message)
                update = frame.get("update")
                if isinstance(update, dict) and "terminal_changed" in update:
                    summary = update["terminal_changed"]["terminal"] or {}
                    received.extra["alive"] = summary.get("alive")
                continue
            received.add(message, TERMINAL_OUTPUT_HEADER.size)
        return received

    async def close(self) -> None:
        await self.ws.close()


class TerminadoClient:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    @classmethod
    async def open(cls, url: str, **kwargs: Any) -> TerminadoClient:
        ws = await connect(url, max_size=None, compression=None, **kwargs)
        return cls(ws)

    async def type(self, keys: str) -> None:
        await self.ws.send(json.dumps(["stdin", keys]))

    async def until(self, done: Callable[[Received], bool]) -> Received:
        received = Received()
        while not done(received):
            try:
                message = await self.ws.recv()
            except Exception:
                received.extra["alive"] = False
                break
            kind, *rest = json.loads(message)
            if kind == "stdout":
                received.add(rest[0].encode())
            elif kind == "disconnect":
                received.extra["alive"] = False
        return received

    async def close(self) -> None:
        await self.ws.close()


Client = ForgeClient | TerminadoClient
Opener = Callable[[], Awaitable[Client]]


def opener(server: Server, **kwargs: Any) -> Opener:
    async def open_client() -> Client:
        if server.name == "forge":
            return await ForgeClient.open(server.url, **kwargs)
        return await TerminadoClient.open(server.url)

    return open_client


async def prompt(client: Client) -> None:
    """Wait until the shell is at its prompt (a marker echoed on an emptied line)."""
    await client.type(f"\x15{MARK_COMMAND}\r")
    async with asyncio.timeout(30):
        await client.until(lambda r: MARK in r.tail and b"$ " in r.tail.rpartition(MARK)[2])


def progress(text: str) -> None:
    print(f"... {text}", file=sys.stderr, flush=True)


# --- the measurements --------------------------------------------------------------------


def raw_floor(megabytes: int) -> tuple[float, float]:
    """MB/s of the workload read straight off a PTY into nothing, and the reader's CPU s/MB
    (what reading a PTY costs any server before it does anything with the bytes)."""
    process = PtyProcess.spawn(["/bin/sh", "-c", workload(megabytes)])
    cpu = time.process_time()
    started = time.perf_counter()
    while True:
        try:
            if not os.read(process.fd, 65536):
                break
        except OSError:
            break
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    process.close(force=True)
    return megabytes / elapsed, cpu / megabytes


READER = """
import socket, sys
with socket.create_connection(("127.0.0.1", int(sys.argv[1]))) as connection:
    while connection.recv(1 << 20):
        pass
"""
"""The relay floor's client: reads the TCP stream into nothing, in its own process."""


def draining_client() -> tuple[subprocess.Popen[bytes], socket.socket]:
    """A client process that drains a loopback TCP stream into nothing, and our end of it."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        reader = subprocess.Popen([sys.executable, "-c", READER, str(listener.getsockname()[1])])
        connection, _ = listener.accept()
    return reader, connection


def relay_floor(megabytes: int) -> tuple[float, float]:
    """MB/s and the relay's CPU s/MB when one process reads the PTY and writes the bytes, as
    read, to a loopback TCP socket another process drains: no framing, no event loop. Any
    server that sends a PTY's bytes to a socket client pays at least this much per MB."""
    reader, connection = draining_client()
    process = PtyProcess.spawn(["/bin/sh", "-c", workload(megabytes)])
    cpu = time.process_time()
    started = time.perf_counter()
    with connection:
        while True:
            try:
                data = os.read(process.fd, 65536)
            except OSError:
                break
            if not data:
                break
            connection.sendall(data)
        connection.shutdown(socket.SHUT_WR)
        cpu = time.process_time() - cpu
        reader.wait()
    elapsed = time.perf_counter() - started
    process.close(force=True)
    return megabytes / elapsed, cpu / megabytes


MIDDLE = """
import socket, sys, time
connection = socket.socket(fileno=int(sys.argv[2]))
if sys.argv[1].startswith("ipc://"):
    import zmq
    pull = zmq.Context().socket(zmq.PULL)
    pull.bind(sys.argv[1])
    def pieces():
        while len(frame := pull.recv(copy=False)):
            yield frame.buffer
else:
    upstream = socket.socket(fileno=int(sys.argv[1]))
    def pieces():
        buffer = bytearray(1 << 17)
        while count := upstream.recv_into(buffer):
            yield memoryview(buffer)[:count]
print("ready", flush=True)
for piece in pieces():
    connection.sendall(piece)
connection.shutdown(socket.SHUT_WR)
print(time.process_time(), flush=True)
"""
"""The two-process relay's supervisor side: batches in (ZeroMQ or a unix socket), out to TCP."""


def two_process_floor(megabytes: int, scratch: Path, *, zeromq: bool) -> tuple[float, float]:
    """The relay floor split the way forge is: this process reads the PTY in batches of up to
    64 KiB (drained until it would block) and hands each to a second process, which writes it
    to the client's TCP socket; over ZeroMQ ipc (forge's hop), or a plain unix socket (the hop
    without ZeroMQ). MB/s and the CPU s/MB of both processes."""
    import select

    import zmq

    reader, connection = draining_client()
    mine, theirs = socket.socketpair()
    endpoint = f"ipc://{scratch}/two-process-floor" if zeromq else str(theirs.fileno())
    with connection, theirs:
        middle = subprocess.Popen(
            [sys.executable, "-c", MIDDLE, endpoint, str(connection.fileno())],
            pass_fds=(connection.fileno(), theirs.fileno()), stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
    assert middle.stdout is not None
    middle.stdout.readline()
    send: Callable[[bytearray], object] = mine.sendall
    if zeromq:
        push: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.PUSH)
        push.connect(endpoint)
        send = functools.partial(push.send, copy=False)
    process = PtyProcess.spawn(["/bin/sh", "-c", workload(megabytes)])
    os.set_blocking(process.fd, False)
    poller = select.poll()
    poller.register(process.fd, select.POLLIN)
    cpu = time.process_time()
    started = time.perf_counter()
    done = False
    while not done:
        poller.poll()
        batch = bytearray()
        while len(batch) < 65536:
            try:
                data = os.read(process.fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            if not data:
                done = True
                break
            batch += data
        if batch:
            send(batch)
    if zeromq:
        push.send(b"")  # the end, as an empty message; a unix socket ends by shutting down
    mine.shutdown(socket.SHUT_WR)
    cpu = time.process_time() - cpu
    middle_cpu = float(middle.stdout.readline())
    middle.wait()
    reader.wait()
    elapsed = time.perf_counter() - started
    if zeromq:
        push.close(linger=0)
    mine.close()
    process.close(force=True)
    return megabytes / elapsed, (cpu + middle_cpu) / megabytes


async def flood(server: Server, megabytes: int) -> dict[str, float]:
    client = await opener(server)()
    await prompt(client)
    cpu = server.cpu_seconds()
    started = time.perf_counter()
    await client.type(flood_command(megabytes) + "\r")
    received = await client.until(lambda r: MARK in r.tail)
    elapsed = time.perf_counter() - started
    cpu = server.cpu_seconds() - cpu
    await client.close()
    return {
        "mb_s": megabytes / elapsed,
        "cpu_per_mb": cpu / megabytes,
        "frame_kib": received.data_bytes / received.frames / 1024,
    }


async def echo(server: Server, keys: int) -> list[float]:
    client = await opener(server)()
    await prompt(client)
    latencies = []
    for index in range(keys):
        if index and index % 60 == 0:
            await client.type("\x15")  # kill the line, so it never wraps
            await client.until(lambda r: r.frames > 0)
        started = time.perf_counter()
        await client.type("a")
        await client.until(lambda r: b"a" in r.tail)
        latencies.append((time.perf_counter() - started) * 1000)
    await client.close()
    return latencies


async def exit_tail(server: Server, megabytes: int) -> int:
    """Bytes of a print that never arrive when the shell exits right after printing them."""
    client = await opener(server, subscribe=True)()
    await prompt(client)
    wanted = megabytes * 1_000_000
    await client.type(f"head -c {wanted} /dev/zero | tr '\\0' '\\132'; exit\r")
    received = await client.until(lambda r: r.extra.get("alive") is False)
    await client.close()
    return wanted - received.zs


async def stalled_viewer(server: Server, seconds: float, command: str) -> dict[str, float]:
    """Supervisor memory growth and CPU while a viewer that never reads watches `command`."""
    runner = await ForgeClient.open(server.url)
    await prompt(runner)
    sock = socket.create_connection(("127.0.0.1", int(server.url.split(":")[2].split("/")[0])))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
    stalled = await ForgeClient.open(server.url, sock=sock, max_queue=1, control=False)
    await runner.close()
    watcher = stalled.ws.transport
    watcher.pause_reading()
    supervisor = psutil.Process(server.process.pid)
    rss_before = server.rss()
    cpu_before = sum(supervisor.cpu_times()[:2])
    await stalled.type(f"timeout {seconds:g} sh -c '{command}'\r")
    peak = rss_before
    deadline = time.perf_counter() + seconds + 0.5
    while time.perf_counter() < deadline:
        peak = max(peak, server.rss())
        await asyncio.sleep(0.05)
    cpu = sum(supervisor.cpu_times()[:2]) - cpu_before
    watcher.resume_reading()
    stalled.ws.transport.abort()
    return {"rss_growth_mb": (peak - rss_before) / 1e6, "cpu_s": cpu}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def run(args: argparse.Namespace) -> None:
    home = Path(tempfile.mkdtemp(prefix="forge-bench-terminal-"))
    servers: list[Server] = []
    try:
        for kind in ("forge", "terminado"):  # one at a time: a failed start stops the first
            servers.append(start_server(kind, home))
        floors: list[float] = []
        floor_cpus: list[float] = []
        relays: list[tuple[float, float]] = []
        two_process: list[tuple[float, float]] = []
        unix_hop: list[tuple[float, float]] = []
        floods: dict[str, list[dict[str, float]]] = {s.name: [] for s in servers}
        for _ in range(args.repeats):
            floor_mb_s, floor_cpu = raw_floor(args.mb)
            floors.append(floor_mb_s)
            floor_cpus.append(floor_cpu)
            progress("relay floor")
            relays.append(relay_floor(args.mb))
            progress("two-process relay floors")
            unix_hop.append(two_process_floor(args.mb, home, zeromq=False))
            two_process.append(two_process_floor(args.mb, home, zeromq=True))
            for server in servers:
                progress(f"flood through {server.name}")
                floods[server.name].append(await phase(flood(server, args.mb)))
        floor = max(floors)
        progress("echo latency")
        echoes = {s.name: await phase(echo(s, args.keys)) for s in servers}
        progress("bytes at exit")
        tails = {s.name: await phase(exit_tail(s, 10)) for s in servers}
        forge = servers[0]
        progress("stalled viewers")
        stalls = {
            "flood": await phase(stalled_viewer(forge, args.stall, "yes")),
            "trickle": await phase(
                stalled_viewer(forge, args.stall, "while :; do seq 1 2000; sleep 0.1; done")
            ),
        }
    finally:
        for server in servers:
            server.stop()
    print(f"# bench/terminal.py  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"# {platform.node()}  {os.cpu_count()} CPUs  {platform.platform()}")
    print(f"# workload: head -c {args.mb}M /dev/zero | tr '\\0' x   best of {args.repeats}")
    print(
        f"raw PTY floor         {floor:8.1f} MB/s  (runs: {', '.join(f'{f:.0f}' for f in floors)})"
        f"   reader CPU {min(floor_cpus) * 1000:6.2f} ms/MB"
    )
    relay_mb_s, relay_cpu = max(r[0] for r in relays), min(r[1] for r in relays)
    print(
        f"relay floor           {relay_mb_s:8.1f} MB/s  {relay_mb_s / floor:6.1%} of floor"
        f"   CPU {relay_cpu * 1000:6.2f} ms/MB  (PTY -> TCP, one process, no framing)"
    )
    unix_mb_s, unix_cpu = max(r[0] for r in unix_hop), min(r[1] for r in unix_hop)
    print(
        f"unix-socket floor     {unix_mb_s:8.1f} MB/s  {unix_mb_s / floor:6.1%} of floor"
        f"   CPU {unix_cpu * 1000:6.2f} ms/MB  (PTY -> unix socket -> TCP, batches <= 64 KiB)"
    )
    split_mb_s, split_cpu = max(r[0] for r in two_process), min(r[1] for r in two_process)
    print(
        f"two-process floor     {split_mb_s:8.1f} MB/s  {split_mb_s / floor:6.1%} of floor"
        f"   CPU {split_cpu * 1000:6.2f} ms/MB  (PTY -> ZeroMQ ipc -> TCP, batches <= 64 KiB)"
    )
    for name, runs in floods.items():
        best = max(runs, key=lambda r: r["mb_s"])
        cpu = min(r["cpu_per_mb"] for r in runs)
        line = f"{name:<10} flood    {best['mb_s']:8.1f} MB/s  {best['mb_s'] / floor:6.1%} of floor"
        line += f"   CPU {cpu * 1000:6.2f} ms/MB"
        if name == "forge":
            line += f"   avg frame {best['frame_kib']:.1f} KiB"
        print(line)
    forge_cpu = min(r["cpu_per_mb"] for r in floods["forge"])
    terminado_cpu = min(r["cpu_per_mb"] for r in floods["terminado"])
    print(
        f"forge CPU per MB / terminado's: {forge_cpu / terminado_cpu:.2f}"
        f"   relay floor's / terminado's: {relay_cpu / terminado_cpu:.2f}"
        f"   unix-socket floor's: {unix_cpu / terminado_cpu:.2f}"
        f"   two-process floor's: {split_cpu / terminado_cpu:.2f}"
    )
    for name, values in echoes.items():
        p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
        print(f"{name:<10} echo     p50 {p50:6.2f} ms   p99 {p99:6.2f} ms   ({len(values)} keys)")
    for name, lost in tails.items():
        print(f"{name:<10} exit     {lost} of 10000000 bytes lost")
    for name, stall in stalls.items():
        print(
            f"forge stalled viewer ({name}, {args.stall:g} s): supervisor RSS +"
            f"{stall['rss_growth_mb']:.1f} MB, CPU {stall['cpu_s']:.2f} s"
        )


def phase(work: Awaitable[Any]) -> Awaitable[Any]:
    """Bound one measurement, so a hang reports instead of waiting forever."""

    async def bounded() -> Any:
        async with asyncio.timeout(180):
            return await work

    return bounded()


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--serve-forge":
        asyncio.run(serve_forge(int(sys.argv[2]), Path(sys.argv[3])))
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--serve-terminado":
        serve_terminado(int(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=40, help="flood size in MB")
    parser.add_argument("--keys", type=int, default=200, help="keystrokes timed for echo")
    parser.add_argument("--stall", type=float, default=10.0, help="seconds a viewer stalls")
    parser.add_argument("--repeats", type=int, default=3, help="flood runs per system")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
