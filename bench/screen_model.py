"""The terminal host's screen model, measured through a real host: what views and resizes cost.

    .venv/bin/python bench/screen_model.py [--mb 20] [--views 20]

One terminal host worker (bash) at 80x24: a flood (`head -c N | tr`) and its throughput with the
host's CPU (and its model process's, when it has one); then colourful output (`ls -lR
--color=always /usr/lib | head -4000`), after which a view is asked `--views` times (ms each,
p50/max, and the view's size); resizes 80->40->120->80 (ms each, with scrollback to reflow);
the resident memory of the host and its children. Run against another checkout of forge with
PYTHONPATH=<that checkout> to compare.
"""

from __future__ import annotations

import sys

# bench/ holds socket.py: keep this folder off sys.path so `import socket` is the stdlib's.
if sys.path[0] == __file__.rpartition("/")[0]:
    sys.path.pop(0)

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from forge.ipc.manager import WorkerManager
from forge.ipc.messages import StreamFrame
from forge.ipc.policy import LifecycleTimings
from forge.ipc.protocol import call
from forge.ptyinput import PtyInput
from forge.workers.terminal.protocol import OUTPUT_STREAM, TERMINAL, Resize, View

BASH = ["/bin/bash", "--noprofile", "--norc", "-i"]


class Output:
    def __init__(self) -> None:
        self.data = bytearray()
        self.changed = asyncio.Event()

    def on_frame(self, frame: StreamFrame) -> None:
        if isinstance(frame.meta, int):
            self.data += frame.payload
            self.changed.set()

    def on_end(self, stream_id: str, reason: str) -> None:
        self.changed.set()

    async def wait_for(self, text: bytes, start: int) -> None:
        while self.data.find(text, start) == -1:
            self.changed.clear()
            await self.changed.wait()


def cpu(process: psutil.Process) -> float:
    total = 0.0
    for each in [process, *process.children(recursive=True)]:
        times = each.cpu_times()
        total += times.user + times.system
    return total


def rss_mb(process: psutil.Process) -> float:
    return sum(p.memory_info().rss for p in [process, *process.children()]) / 1e6


async def main(megabytes: int, views: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["XDG_RUNTIME_DIR"] = scratch
        timings = LifecycleTimings(hello_timeout=30.0, request_timeout=60.0, kill_grace=0.5)
        async with WorkerManager(timings=timings) as manager:
            config = {"terminal": 1, "cwd": scratch, "argv": BASH}
            handle = manager.start(TERMINAL.spec("bench", config=config, env={"PS1": "$ "}))
            output = Output()
            handle.subscribe(OUTPUT_STREAM, output.on_frame, output.on_end)
            row = await handle.wait_for(lambda row: row.state == "ready", 30.0)
            host = psutil.Process(row.pid)
            master = handle.borrow()
            assert master is not None
            keys = PtyInput(master)
            await output.wait_for(b"$ ", 0)

            start, before = len(output.data), cpu(host)
            began = time.perf_counter()
            keys.write(b"head -c %d /dev/zero | tr '\\0' x; echo D''ONE\r" % (megabytes << 20))
            await output.wait_for(b"DONE\r\n", start)
            took = time.perf_counter() - began
            print(
                f"flood {megabytes} MB: {megabytes / took:.1f} MB/s, "
                f"host CPU {(cpu(host) - before) / megabytes * 1000:.1f} ms/MB"
            )

            start = len(output.data)
            keys.write(b"ls -lR --color=always /usr/lib | head -4000; echo D''ONE\r")
            await output.wait_for(b"DONE\r\n", start)
            times, size = [], 0
            for _ in range(views):
                began = time.perf_counter()
                view = await call(handle, View())
                times.append((time.perf_counter() - began) * 1000)
                size = len(view.screen.encode())
            print(
                f"view after ls -lR: p50 {statistics.median(times):.1f} ms, "
                f"max {max(times):.1f} ms, {size / 1024:.1f} KiB"
            )
            for cols, rows in ((40, 24), (120, 30), (80, 24)):
                began = time.perf_counter()
                await call(handle, Resize(cols=cols, rows=rows))
                await call(handle, View())
                resized = (time.perf_counter() - began) * 1000
                print(f"resize to {cols}x{rows} and view: {resized:.1f} ms")
            children = sorted(child.name() for child in host.children())
            print(f"resident memory, host and children {children}: {rss_mb(host):.1f} MB")
            keys.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=20, help="flood size in MB")
    parser.add_argument("--views", type=int, default=20, help="views asked after ls -lR")
    arguments = parser.parse_args()
    print(f"forge from {Path(sys.modules['forge'].__file__ or '').parent}")
    asyncio.run(main(arguments.mb, arguments.views))
