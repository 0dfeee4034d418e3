"""Socket benchmark: `forge supervise` fanning binary frames out, beside a bare websockets server.

    .venv/bin/python bench/socket_relay.py [--quick]

Both servers run as their own process and receive the same two requests: each client sends
`drill_listen`, then one client sends `drill_stream{count, size}`, and the server sends `count`
kind-4 frames of `size` payload bytes to every listener. The supervisor serves them through its
production path (the drill verbs, loaded with FORGE_SUPERVISOR_DRILLS=1: per-connection backlog,
one writer, the monitor); the bare server is websockets' asyncio server awaiting `send` per frame
per listener. Clients speak the handshake with websockets' sans-I/O protocol and then only count
bytes, so the servers, not the clients, are what is measured. Prints frames/s and MB/s for 1 and
10 clients at 100 B, 16 KiB and 1 MiB, with the supervisor's ratio to the bare server (the best
of three alternating runs each).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import platform
import socket
import sys
import tempfile
import time
from pathlib import Path

from websockets.asyncio.server import ServerConnection, serve
from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosed
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import State
from websockets.uri import parse_uri

from forge.client.auth import subprotocols
from forge.testhooks import SUPERVISOR_DRILLS
from forge.wire.binary import terminal_output

SIZES = (100, 16 * 1024, 1024 * 1024)
FANOUTS = (1, 10)
BYTES_PER_RUN = 64 * 1024 * 1024
"""Each (size, clients) run streams about this many payload bytes to every client."""
MAX_FRAMES = 20_000
REPEATS = 3
"""Each pair is measured this many times, alternating, and the best of each is kept: other
work on a shared machine slows single runs, never speeds them up."""


def frames_for(size: int, quick: bool) -> int:
    count = min(MAX_FRAMES, max(50, BYTES_PER_RUN // size))
    return max(20, count // 8) if quick else count


def wire_length(payload: int) -> int:
    """Bytes one unmasked server frame of `payload` bytes takes on the wire."""
    return payload + (2 if payload < 126 else 4 if payload < 65536 else 10)


async def bare_server(port: int) -> None:
    """The baseline: websockets' server, one awaited `send` per frame per listener."""
    listeners: list[ServerConnection] = []

    async def handle(ws: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for message in ws:
                request = json.loads(message)
                if request["kind"] == "drill_listen":
                    listeners.append(ws)
                    await ws.send(json.dumps({"kind": "drill_done"}))
                elif request["kind"] == "drill_stream":
                    await stream(request["count"], request["size"])
        if ws in listeners:
            listeners.remove(ws)

    async def stream(count: int, size: int) -> None:
        payload = bytes(size)
        audience = [listener for listener in listeners if listener.state is State.OPEN]
        for seq in range(1, count + 1):
            frame = terminal_output(terminal=1, seq=seq, data=payload)
            for listener in audience:
                await listener.send(frame)
        for listener in audience:
            await listener.send(json.dumps({"kind": "drill_done"}))

    logging.getLogger("websockets").setLevel(logging.CRITICAL)
    async with serve(handle, "127.0.0.1", port, compression=None, max_size=16 * 2**20):
        await asyncio.Future()


class CountingClient:
    """Handshake and small JSON through websockets' sans-I/O client, then count raw bytes."""

    async def open(self, port: int) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", port, limit=2**22)
        uri = parse_uri(f"ws://127.0.0.1:{port}/socket")
        self.protocol = ClientProtocol(uri, subprotocols=subprotocols(), max_size=None)
        self.protocol.send_request(self.protocol.connect())
        self._flush()
        await self._until(lambda e: isinstance(e, Response))

    async def listen(self) -> None:
        self.send({"kind": "drill_listen"})
        await self._until(
            lambda e: (
                isinstance(e, Frame)
                and e.opcode is Opcode.TEXT
                and json.loads(e.data)["kind"] == "drill_done"
            )
        )

    def send(self, message: dict[str, object]) -> None:
        self.protocol.send_text(json.dumps(message).encode())
        self._flush()

    async def count(self, expected: int) -> None:
        received = 0
        while received < expected:
            chunk = await self.reader.read(2**22)
            if not chunk:
                raise ConnectionError(f"the server closed mid-stream at {received} of {expected}")
            received += len(chunk)

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()

    async def _until(self, wanted: object) -> None:
        while True:
            data = await self.reader.read(2**16)
            self.protocol.receive_data(data)
            self._flush()
            if any(wanted(event) for event in self.protocol.events_received()):  # type: ignore[operator]
                return

    def _flush(self) -> None:
        for chunk in self.protocol.data_to_send():
            self.writer.write(chunk)


async def measure(port: int, clients: int, size: int, count: int) -> float:
    """Seconds from the stream request to the last client's last byte."""
    readers = [CountingClient() for _ in range(clients)]
    for reader in readers:
        await reader.open(port)
        await reader.listen()
    expected = count * wire_length(7 + size)
    started = time.perf_counter()
    readers[0].send({"kind": "drill_stream", "count": count, "size": size})
    await asyncio.gather(*(reader.count(expected) for reader in readers))
    elapsed = time.perf_counter() - started
    for reader in readers:
        await reader.close()
    return elapsed


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def wait_listening(port: int) -> None:
    for _ in range(400):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise RuntimeError(f"nothing listens on {port}")


async def start_servers(home: Path) -> tuple[list[asyncio.subprocess.Process], int, int]:
    os.environ["XDG_STATE_HOME"] = str(home / "state")  # where the clients read the token
    env = SUPERVISOR_DRILLS.set(
        dict(
            os.environ,
            XDG_CONFIG_HOME=str(home / "config"),
            XDG_RUNTIME_DIR=str(home / "runtime"),
        )
    )
    forge_port, bare_port = free_port(), free_port()
    forge = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "forge.cli", "supervise", "--port", str(forge_port), env=env
    )
    bare = await asyncio.create_subprocess_exec(  # -P: bench/socket.py is not the stdlib's
        sys.executable, "-P", __file__, "--bare-server", str(bare_port), env=env
    )
    try:
        await wait_listening(forge_port)
        await wait_listening(bare_port)
    except BaseException:
        await stop([forge, bare])
        raise
    return [forge, bare], forge_port, bare_port


async def stop(processes: list[asyncio.subprocess.Process]) -> None:
    for process in processes:
        if process.returncode is None:
            process.terminate()
        await process.wait()


async def run(quick: bool) -> None:
    with tempfile.TemporaryDirectory() as home:
        processes, forge_port, bare_port = await start_servers(Path(home))
        try:
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            python = platform.python_version()
            print(f"# {platform.node()}, {os.cpu_count()} CPUs, Python {python}, {when}")
            print(
                f"{'clients':>7} {'size':>8} {'frames':>7} {'forge f/s':>11} {'bare f/s':>11} "
                f"{'forge MB/s':>10} {'bare MB/s':>10} {'ratio':>6}"
            )
            for clients in FANOUTS:
                for size in SIZES:
                    count = frames_for(size, quick)
                    bare, forge = float("inf"), float("inf")
                    for _ in range(REPEATS):
                        bare = min(bare, await measure(bare_port, clients, size, count))
                        forge = min(forge, await measure(forge_port, clients, size, count))
                    frames = count * clients
                    megabytes = frames * size / 1e6
                    print(
                        f"{clients:>7} {size:>8} {count:>7} {frames / forge:>11,.0f} "
                        f"{frames / bare:>11,.0f} {megabytes / forge:>10,.1f} "
                        f"{megabytes / bare:>10,.1f} {bare / forge:>6.2f}"
                    )
        finally:
            await stop(processes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="an eighth of the frames")
    parser.add_argument("--bare-server", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_server is not None:
        asyncio.run(bare_server(args.bare_server))
    else:
        asyncio.run(run(args.quick))


if __name__ == "__main__":
    main()
