"""Client benchmark: forge's own client reading kind-4 frames, beside a bare websockets client.

    .venv/bin/python bench/client.py [--quick]

One `forge supervise` (drills on) streams `count` kind-4 frames of `size` payload bytes to one
listener (`drill_listen`, then `drill_stream`). The listener is either a bare websockets asyncio
client calling `recv()` and counting bytes, or `forge.client.connection.ForgeConnection` reading
`next_event()` (decoded into `TerminalOutput`, through the bounded event backlog, with the probe
running). The server and the workload are the same, so the ratio is what the client's own
decoding and dispatch cost. Prints MB/s and client CPU microseconds per frame for 100 B, 4 KiB and
64 KiB frames (the terminal host batches up to 64 KiB), best of three alternating runs.
"""

from __future__ import annotations

import sys

# bench/ holds a socket.py: keep this folder off sys.path so `import socket` is the stdlib's.
if sys.path[0] == __file__.rpartition("/")[0]:
    sys.path.pop(0)

import argparse
import asyncio
import json
import os
import platform
import socket
import tempfile
import time
from pathlib import Path

from websockets.asyncio.client import connect as ws_connect

from forge.client.auth import subprotocols
from forge.client.connection import ForgeConnection
from forge.client.frames import OtherFrame, TerminalOutput
from forge.logs import configure
from forge.supervisor.socket.drills import DrillListen, DrillStream
from forge.testhooks import SUPERVISOR_DRILLS

SIZES = (100, 4 * 1024, 64 * 1024)
BYTES_PER_RUN = 64 * 1024 * 1024
MAX_FRAMES = 20_000
REPEATS = 3


def frames_for(size: int, quick: bool) -> int:
    count = min(MAX_FRAMES, max(50, BYTES_PER_RUN // size))
    return max(20, count // 8) if quick else count


async def bare(url: str, count: int, size: int) -> tuple[float, float]:
    async with ws_connect(url, max_size=None, compression=None, subprotocols=subprotocols()) as ws:
        await ws.recv()
        await ws.recv()
        await ws.send(json.dumps({"kind": "drill_listen"}))
        assert json.loads(await ws.recv())["kind"] == "drill_done"
        started, cpu = time.perf_counter(), time.process_time()
        await ws.send(json.dumps({"kind": "drill_stream", "count": count, "size": size}))
        received = 0
        while received < count:
            if isinstance(await ws.recv(), bytes):
                received += 1
        return time.perf_counter() - started, time.process_time() - cpu


async def forge_client(url: str, count: int, size: int) -> tuple[float, float]:
    connection = await ForgeConnection.open(url)
    try:
        await connection.send(DrillListen())
        assert isinstance(await connection.next_event(), OtherFrame)
        started, cpu = time.perf_counter(), time.process_time()
        await connection.send(DrillStream(count=count, size=size))
        received = 0
        while received < count:
            if isinstance(await connection.next_event(), TerminalOutput):
                received += 1
        return time.perf_counter() - started, time.process_time() - cpu
    finally:
        await connection.close()


async def main(quick: bool) -> None:
    configure(None, to_stderr=False)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"ws://127.0.0.1:{port}/socket"
    with tempfile.TemporaryDirectory() as home:
        config = Path(home) / "forge.toml"
        config.write_text("", encoding="utf-8")
        os.environ["XDG_STATE_HOME"] = home  # where both clients read the token
        env = SUPERVISOR_DRILLS.set(dict(os.environ))
        server = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "forge.cli", "supervise", "--config", str(config),
            "--port", str(port), env=env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        try:
            for _ in range(200):
                try:
                    await (await ForgeConnection.open(url)).close()
                    break
                except Exception:
                    await asyncio.sleep(0.1)
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            print(f"# {platform.machine()}, {os.cpu_count()} CPUs, "
                  f"python {platform.python_version()}, {when}")  # fmt: skip
            print(f"{'size':>8} {'frames':>7} {'bare MB/s':>10} {'forge MB/s':>11} {'ratio':>6} "
                  f"{'bare us/frame':>14} {'forge us/frame':>15}")  # fmt: skip
            for size in SIZES:
                count = frames_for(size, quick)
                best: dict[str, tuple[float, float]] = {}
                for _ in range(REPEATS):
                    for name, run in (("bare", bare), ("forge", forge_client)):
                        wall, cpu = await run(url, count, size)
                        if name not in best or wall < best[name][0]:
                            best[name] = (wall, cpu)
                mb = count * size / 1e6
                bare_rate, forge_rate = mb / best["bare"][0], mb / best["forge"][0]
                print(f"{size:>8} {count:>7} {bare_rate:>10.1f} {forge_rate:>11.1f} "
                      f"{forge_rate / bare_rate:>6.2f} {best['bare'][1] / count * 1e6:>14.1f} "
                      f"{best['forge'][1] / count * 1e6:>15.1f}")  # fmt: skip
        finally:
            server.terminate()
            await server.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="an eighth of the frames")
    asyncio.run(main(parser.parse_args().quick))
