"""IPC benchmark: the real envelope and lifecycle side by side with a bare pyzmq pair.

    .venv/bin/python -P bench/ipc.py [--quick]    (-P: bench/socket.py must not shadow the stdlib)

Measures, in one run: small-request round trips (p50/p99) through `WorkerHandle.request` and
through a bare zmq.asyncio ROUTER/DEALER echo; bulk throughput for 64 KiB and 1 MiB frames
through `BulkStream.send` -> subscriber and through the bare pair; death detection (SIGKILL to
the in-flight request's `worker_crashed`) and hang detection (SIGSTOP to the restart) over 20
trials each; and how long after a SIGKILL of a process running a manager its workers and their
children are all gone (PDEATHSIG). Prints each figure with its ratio to the bare pair.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
import timeit
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgpack
import zmq
import zmq.asyncio

from forge import logs
from forge.allocator import tune_for_long_life
from forge.children import ExitWatch
from forge.ipc.envelope import Envelope, MessageType, encode
from forge.ipc.errors import WorkerCrashed
from forge.ipc.manager import WorkerHandle, WorkerManager, WorkerSpec, WorkerState
from forge.ipc.messages import StreamFrame
from forge.ipc.policy import LifecycleTimings
from forge.ipc.protocol import call
from forge.testing.misbehaving_protocol import MISBEHAVING, Echo, Pump, Sleep

SIZES = (64 * 1024, 1024 * 1024)
ROUNDS = 5


def spec(name: str) -> WorkerSpec:
    return MISBEHAVING.spec(name)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# --- the bare pyzmq pair ---------------------------------------------------------------------


async def bare_peer(endpoint: str) -> None:
    """The far end of the bare pair: echo, or send N frames of a size, then b"end"."""
    context = zmq.asyncio.Context()
    socket = context.socket(zmq.DEALER)
    socket.connect(endpoint)
    await socket.send(b"hi")
    while True:
        frames = await socket.recv_multipart(copy=False)
        command = frames[0].bytes
        if command == b"echo":
            await socket.send_multipart(frames, copy=False)
        elif command == b"pump":
            size, count = int(frames[1].bytes), int(frames[2].bytes)
            payload = bytes(size)
            for _ in range(count):
                await socket.send_multipart([b"d", payload], copy=False)
            await socket.send(b"end")
        else:
            break
    socket.close(linger=0)
    context.term()


class BarePair:
    def __init__(self, directory: Path) -> None:
        self.context = zmq.asyncio.Context()
        self.socket = self.context.socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        endpoint = f"ipc://{directory}/bare"
        self.socket.bind(endpoint)
        self.endpoint = endpoint
        self.identity = b""

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-P", __file__, "--peer", self.endpoint
        )
        self.identity, _ = await self.socket.recv_multipart()

    async def round_trip(self) -> None:
        await self.socket.send_multipart([self.identity, b"echo", b"x" * 32])
        await self.socket.recv_multipart()

    async def pump(self, size: int, count: int) -> None:
        await self.socket.send_multipart([self.identity, b"pump", b"%d" % size, b"%d" % count])
        while True:
            frames = await self.socket.recv_multipart(copy=False)
            if frames[1].bytes == b"end":
                return

    async def close(self) -> None:
        await self.socket.send_multipart([self.identity, b"quit"])
        await self.process.wait()
        self.socket.close(linger=0)
        self.context.term()


# --- through forge.ipc -----------------------------------------------------------------------


async def forge_pump(worker: WorkerHandle, size: int, count: int) -> None:
    ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    received = 0

    def on_frame(frame: StreamFrame) -> None:
        nonlocal received
        received += len(frame.payload)

    subscription = worker.subscribe("bench", on_frame, lambda s, r: ended.set_result(None))
    await call(worker, Pump(stream="bench", size=size, count=count), within=600)
    await ended
    subscription.close()
    assert received == size * count, (received, size * count)


async def timed(action: Callable[[], Awaitable[None]], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        await action()
        samples.append(time.perf_counter() - start)
    return samples


async def death_trials(manager: WorkerManager, trials: int) -> list[float]:
    """SIGKILL with a request in flight; time until that request's `worker_crashed`."""
    worker = manager.start(spec("death"))
    samples = []
    for trial in range(trials):
        await worker.wait_for(lambda r, t=trial: r.state == "ready" and r.restarts == t, 60)
        await call(worker, Echo(value=1))
        in_flight = asyncio.ensure_future(call(worker, Sleep(seconds=60)))
        await call(worker, Echo(value=2))  # the sleep has reached the worker
        assert worker.pid is not None
        start = time.perf_counter()
        os.kill(worker.pid, signal.SIGKILL)
        try:
            await in_flight
        except WorkerCrashed:
            samples.append(time.perf_counter() - start)
    return samples


async def hang_trials(manager: WorkerManager, trials: int, parallel: int) -> list[float]:
    """SIGSTOP a ready worker; time until the manager has killed it (state `restarting`)."""
    samples: list[float] = []

    async def one(worker: WorkerHandle) -> None:
        row = await worker.wait_for(lambda r: r.state == "ready", 60)
        restarts = row.restarts
        await call(worker, Echo(value=1))
        assert worker.pid is not None
        start = time.perf_counter()
        os.kill(worker.pid, signal.SIGSTOP)
        await worker.wait_for(lambda r: r.restarts > restarts, 60)
        samples.append(time.perf_counter() - start)

    workers = [manager.start(spec(f"hang-{i}")) for i in range(parallel)]
    for _ in range(0, trials, parallel):
        await asyncio.gather(*(one(w) for w in workers))
    return samples


async def orphan_trials(trials: int) -> list[float]:
    """SIGKILL a process running a manager (2 workers, 1 child each); time until all exited."""
    samples = []
    for _ in range(trials):
        host = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "forge.testing.manager_host", "2", stdout=asyncio.subprocess.PIPE
        )
        assert host.stdout is not None
        report = json.loads(await host.stdout.readline())
        exits = [exited(pid) for pid in report["workers"] + report["children"]]
        start = time.perf_counter()
        host.send_signal(signal.SIGKILL)
        await asyncio.gather(*exits)
        samples.append(time.perf_counter() - start)
        await host.wait()
    return samples


def exited(pid: int) -> asyncio.Future[None]:
    """Resolves when `pid` exits; watched from now (before the kill being timed)."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    ExitWatch(pid, lambda: done.set_result(None))
    return done


HEADER = [1, "request", 7, None, 0, {"method": "open", "args": {"cols": 80, "rows": 24}}]


def packing(repeat: int) -> None:
    """One small control header packed by `encode`, by `msgpack.packb` (a packer per call, as
    forge did until its 256 KiB buffer per call showed in the supervisor's heap), and by a bare
    reused packer (the floor), under the supervisor's allocator settings: with the mmap threshold
    held at 128 KiB, a 256 KiB buffer is mapped and unmapped per call unless a hole fits it."""
    envelope = Envelope(MessageType.REQUEST, 7, None, 0, HEADER[5])
    reused = msgpack.Packer(use_bin_type=True)
    ways: dict[str, Callable[[], object]] = {
        "forge encode": lambda: encode(envelope),
        "msgpack.packb": lambda: msgpack.packb(HEADER, use_bin_type=True),
        "reused packer": lambda: reused.pack(HEADER),
    }
    per_call = {
        name: min(timeit.repeat(way, number=repeat, repeat=5)) / repeat * 1e6
        for name, way in ways.items()
    }
    floor = per_call["reused packer"]
    print(f"header packing, one small control header (best of 5 x {repeat}), allocator tuned")
    for name, micros in per_call.items():
        print(f"  {name:<28} {micros:8.2f} us   /floor {micros / floor:6.2f}")


def line(label: str, forge: float, bare: float, unit: str, higher_is_better: bool) -> None:
    ratio = forge / bare if bare else float("nan")
    better = "forge/bare" if higher_is_better else "forge/bare (lower is better)"
    figures = f"forge {forge:10.2f} {unit:<6} bare {bare:10.2f} {unit:<6}"
    print(f"  {label:<28} {figures} {better} {ratio:5.2f}")


async def main(quick: bool) -> None:
    round_trips = 500 if quick else 5000
    counts = {64 * 1024: 2000 if quick else 10000, 1024 * 1024: 200 if quick else 1000}
    trials = 20
    print(f"forge bench/ipc.py  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(
        f"  {platform.node()} {platform.machine()} cpus={os.cpu_count()} "
        f"python {platform.python_version()} pyzmq {zmq.__version__} libzmq {zmq.zmq_version()}"
    )
    print(f"  load average {os.getloadavg()}")
    tune_for_long_life()
    packing(20_000 if quick else 200_000)
    with tempfile.TemporaryDirectory(prefix="forge-bench-") as tmp:
        bare = BarePair(Path(tmp))
        await bare.start()
        async with WorkerManager(runtime_dir=Path(tmp)) as manager:
            worker = manager.start(spec("bench"))
            await worker.wait_for(lambda r: r.state is WorkerState.READY, 60)

            async def forge_rtt() -> None:
                await call(worker, Echo(value="x" * 32))

            for _ in range(200):
                await forge_rtt()
                await bare.round_trip()
            forge_rt = await timed(forge_rtt, round_trips)
            bare_rt = await timed(bare.round_trip, round_trips)
            print(f"round trip, small request ({round_trips} each)")
            for name, q in (("p50", 0.5), ("p99", 0.99)):
                line(name, percentile(forge_rt, q) * 1e6, percentile(bare_rt, q) * 1e6, "us", False)

            print(f"bulk throughput, worker -> supervisor, no frame dropped (median of {ROUNDS})")
            for size in SIZES:
                count = counts[size]
                await forge_pump(worker, size, count // 10)
                await bare.pump(size, count // 10)
                forge_s: list[float] = []
                bare_s: list[float] = []
                for _ in range(ROUNDS):  # interleaved, so load changes hit both alike
                    forge_s += await timed(lambda s=size, c=count: forge_pump(worker, s, c), 1)
                    bare_s += await timed(lambda s=size, c=count: bare.pump(s, c), 1)
                mb = size * count / 1e6
                forge_rate = mb / statistics.median(forge_s)
                bare_rate = mb / statistics.median(bare_s)
                line(f"{size // 1024} KiB x {count}", forge_rate, bare_rate, "MB/s", True)
            await bare.close()

        async with WorkerManager(
            runtime_dir=Path(tmp),
            timings=LifecycleTimings(backoff_initial=0.01, backoff_max=0.01, crash_limit=1000),
        ) as manager:
            deaths = await death_trials(manager, trials)
            print(f"death detection, SIGKILL -> in-flight request fails ({len(deaths)} trials)")
            p50, p99 = percentile(deaths, 0.5) * 1e3, percentile(deaths, 0.99) * 1e3
            print(
                f"  p50 {p50:.2f} ms   p99 {p99:.2f} ms   max {max(deaths) * 1e3:.2f} ms"
                "   (goal: p50 <= 5 ms, p99 <= 50 ms)"
            )
        async with WorkerManager(runtime_dir=Path(tmp)) as manager:
            hangs = await hang_trials(manager, trials, parallel=10)
            print(f"hang detection, SIGSTOP -> killed, heartbeat 1 s x 5 ({len(hangs)} trials)")
            print(
                f"  p50 {percentile(hangs, 0.5):.2f} s   p99 {percentile(hangs, 0.99):.2f} s"
                f"   max {max(hangs):.2f} s   (goal: <= 6 s)"
            )
    orphans = await orphan_trials(10)
    print("orphans, SIGKILL of a process running a manager -> every worker and child exited")
    print(
        f"  ({len(orphans)} trials) p50 {percentile(orphans, 0.5) * 1e3:.1f} ms"
        f"   max {max(orphans) * 1e3:.1f} ms   (goal: <= 50 ms)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples, for a smoke run")
    parser.add_argument("--peer", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.peer:
        asyncio.run(bare_peer(arguments.peer))
    else:
        logs.configure(None, to_stderr=False)
        asyncio.run(main(arguments.quick))
