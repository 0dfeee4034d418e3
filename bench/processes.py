"""Process-view benchmark: one walk tick through the walker worker beside the same walk in-process.

    .venv/bin/python -P bench/processes.py [--quick]

Starts 1, 4 and 16 sessions (a `sh` leading `sleep &` jobs, as a seat's shell does) and, for
each count, times one tick's walk of all of them: in this process (`ProcessWalker.session` and
`process_rows` in a thread, what the worker runs) and through `WorkerHandle.request("walk")` to
a real walker worker (the worker hop: msgpack, ZeroMQ, a thread). Prints p50/p99 of each, the
hop's ratio, and the share of the 1 s interval a tick takes in the worker (time, not CPU alone).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from forge.ipc.manager import WorkerManager
from forge.procs import ProcessWalker
from forge.workers.walker.protocol import WALKER
from forge.workers.walker.rows import process_rows

SESSION = "sleep 600 & sleep 601 & (sleep 602 &); exec cat"


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def machine_processes() -> int:
    return sum(1 for entry in Path("/proc").iterdir() if entry.name.isdigit())


def start_sessions(count: int) -> list[subprocess.Popen[bytes]]:
    """`count` shells, each leading its own session with background jobs, like a seat's."""
    return [
        subprocess.Popen(["sh", "-c", SESSION], stdin=subprocess.PIPE, start_new_session=True)
        for _ in range(count)
    ]


async def timed(work: Callable[[], Awaitable[object]], rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        await work()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


async def main(rounds: int) -> None:
    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
    print(f"# {platform.node()} · {os.cpu_count()} cores · load {os.getloadavg()[0]:.1f}")
    print(f"# processes on the machine: {machine_processes()}")
    walker = ProcessWalker()
    async with WorkerManager() as manager:
        handle = manager.start(WALKER.spec("walker"))
        await handle.request("walk", {"sessions": []})
        print("seats  in-process p50/p99 ms  worker p50/p99 ms  hop ratio (p50)  tick share")
        for count in (1, 4, 16):
            leaders = start_sessions(count)
            try:
                groups = [[leader.pid] for leader in leaders]

                def walk(groups: list[list[int]] = groups) -> object:
                    return [process_rows(r for s in g for r in walker.session(s)) for g in groups]

                async def direct() -> object:
                    # In a thread, as the worker does: a blocked loop here would starve the
                    # manager's heartbeat bookkeeping and get the walker killed as hung.
                    return await asyncio.to_thread(walk)

                async def hop(groups: list[list[int]] = groups) -> object:
                    return await handle.request("walk", {"sessions": groups})

                local = percentiles(await timed(direct, rounds))
                remote = percentiles(await timed(hop, rounds))
                print(
                    f"{count:5d}  {local[0]:8.1f} / {local[1]:6.1f}      "
                    f"{remote[0]:8.1f} / {remote[1]:6.1f}    {remote[0] / local[0]:5.2f}x"
                    f"            {remote[0] / 10:4.1f} %"
                )
            finally:
                for leader in leaders:
                    os.killpg(leader.pid, 9)
                    leader.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="20 rounds instead of 100")
    args = parser.parse_args()
    asyncio.run(main(20 if args.quick else 100))
