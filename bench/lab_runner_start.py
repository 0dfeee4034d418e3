"""Lab attempt runners: time from spawn to `ready` with the machine idle and under CPU load.

    .venv/bin/python -P bench/lab_runner_start.py [--hogs 0,40,110] [--rounds 3]

Starts 4 `forge.workers.lab` runners under a `WorkerManager` (default timings, as `forge
evaluate` does) while N busy loops run, each in a session of its own: with the kernel's
autogroup scheduling every session gets an equal CPU share, and every worker the launcher
starts is a session of its own, so N sessions of load is what a worker competes with. Prints the
slowest round per load beside the idle figure, and any hello timeouts the manager logged: a
runner's start is about 0.2 s of CPU, so once its share makes that longer than the manager's
`hello_timeout` (10 s) the runner is killed, restarted into the same load, and marked failed
after `crash_limit` restarts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from forge import logs
from forge.ipc.manager import WorkerManager, WorkerState
from forge.workers.lab.protocol import LAB_ATTEMPT

RUNNERS = 4


async def start_runners(runtime: Path) -> tuple[float, list[int]]:
    """Seconds until all runners are ready (or failed), and each runner's restarts."""
    started = time.monotonic()
    async with WorkerManager(runtime_dir=runtime) as manager:
        handles = [manager.start(LAB_ATTEMPT.spec(f"lab-attempt-{i + 1}")) for i in range(RUNNERS)]
        settled = (WorkerState.READY, WorkerState.FAILED)
        rows = await asyncio.gather(
            *(handle.wait_for(lambda row: row.state in settled, 600) for handle in handles)
        )
        return time.monotonic() - started, [row.restarts for row in rows]


def hogs(count: int) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(count)
    ]


def hello_timeouts(log_file: Path) -> int:
    if not log_file.exists():
        return 0
    records = (json.loads(line) for line in log_file.read_text().splitlines())
    return sum(r.get("record") == "worker_hang" for r in records)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hogs", default="0,40,110")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-lab-start-") as scratch:
        log_file = Path(scratch) / "ipc.log"
        logs.configure(log_file, to_stderr=False, process="bench")
        idle: float | None = None
        print(f"{os.cpu_count()} CPUs; {RUNNERS} runners per round, {args.rounds} rounds")
        for count in (int(part) for part in args.hogs.split(",")):
            load = hogs(count)
            try:
                before = hello_timeouts(log_file)
                rounds = [
                    asyncio.run(start_runners(Path(tempfile.mkdtemp(dir=scratch))))
                    for _ in range(args.rounds)
                ]
            finally:
                for hog in load:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(hog.pid, signal.SIGKILL)
                    hog.wait()
            slowest = max(seconds for seconds, _ in rounds)
            idle = slowest if idle is None else idle
            restarts = sum(sum(r) for _, r in rounds)
            print(
                f"{count:4d} busy sessions: slowest round {slowest:6.2f} s "
                f"({slowest / idle:5.1f}x the first), restarts {restarts}, "
                f"'no hello' kills {hello_timeouts(log_file) - before}"
            )


if __name__ == "__main__":
    main()
