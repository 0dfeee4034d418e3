"""A seat's git state on a 20,000-file repository, and the socket's ping latency while it is read.

    .venv/bin/python -P bench/git_state.py [--files 20000] [--changed 5000] [--rounds 8]

A supervisor runs in its own process (the socket, the seat-files services: settings, documents,
the git watch and its tree worker; no other workers) with one project on a fresh repository of
`--files` files in 200 folders. The driver then measures, over the socket:
1. time to the session snapshot (work row + git layer + capped diff) on the clean tree and with
   `--changed` files modified, `--rounds` subscribes each;
2. the same reads in this process, split: `scan` (status, numstat, ahead) and `read_diff`;
3. ping round trips every 10 ms from a second client: idle; while the snapshots of (1) run; while
   the tree changes under a held seat (the watch rescans); and while the same git commands run
   from this process against an idle supervisor (the CPU-contention floor: git shares the cores
   whether or not the supervisor runs it). p99 equal to the floor's within noise means git never
   blocks the loop; only the cores are shared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

from websockets.asyncio.client import ClientConnection, connect

from forge.client.auth import subprotocols

SEAT = {"org": "acme", "project": "proj", "label": "lead"}


async def serve(config: Path) -> None:
    """The server role: the socket and the seat-files services, until stdin closes."""
    from forge.config import ConfigWatcher, load_config
    from forge.ipc.manager import WorkerManager
    from forge.logs import configure
    from forge.supervisor import settings
    from forge.supervisor.seatfiles import service as seatfiles
    from forge.supervisor.socket.core import Supervisor
    from forge.supervisor.socket.server import SocketServer
    from forge.wire.seats import Seat

    configure(config.parent / "forge.log", to_stderr=False, level=logging.INFO, process="bench")
    loaded = load_config(config)
    async with WorkerManager() as manager:
        supervisor = Supervisor(loaded)
        watcher = ConfigWatcher(config, loaded, supervisor.apply_config)
        settings.install(supervisor, watcher.check)
        seatfiles.install(supervisor, manager)
        socket = SocketServer(supervisor)
        await socket.start()
        await supervisor.start_seat(Seat(**SEAT))
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await socket.close()
        await supervisor.shutdown()


def git(tree: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True)


def make_repo(tree: Path, files: int) -> None:
    tree.mkdir()
    git(tree, "init", "-q", "-b", "main")
    git(tree, "config", "user.email", "b@example.com")
    git(tree, "config", "user.name", "bench")
    for n in range(files):
        folder = tree / f"d{n % 200:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{n:05d}.txt").write_text(f"file {n}\nline two\nline three\n")
    git(tree, "add", ".")
    git(tree, "commit", "-qm", "many files")


def change(tree: Path, files: int, count: int, lines: int) -> None:
    """`count` files spread over the tree, each given `lines` changed lines."""
    for n in range(0, files, max(1, files // count))[:count]:
        path = tree / f"d{n % 200:03d}" / f"f{n:05d}.txt"
        path.write_text(f"file {n}\n" + "changed\n" * lines)


async def greeted(url: str) -> ClientConnection:
    client = await connect(url, max_size=None, subprotocols=subprotocols())
    await client.recv()
    await client.recv()
    return client


async def snapshot(client: ClientConnection) -> tuple[float, int]:
    """One subscribe answered: seconds, and the snapshot's size in bytes."""
    began = time.perf_counter()
    await client.send(json.dumps({"kind": "subscribe", "what": {"session": SEAT}}))
    while True:
        frame = await client.recv()
        if json.loads(frame)["kind"] == "snapshot":
            break
    took = time.perf_counter() - began
    await client.send(json.dumps({"kind": "unsubscribe", "what": {"session": SEAT}}))
    return took, len(frame)


async def ping(url: str) -> None:
    """The pinger role, its own process so nothing the driver does delays it: a ping every
    10 ms until stdin closes, then the round trips (ms) as one JSON line."""
    client = await greeted(url)
    print("ready", flush=True)
    done = asyncio.ensure_future(asyncio.get_running_loop().run_in_executor(None, sys.stdin.read))
    samples = []
    while not done.done():
        began = time.perf_counter()
        await client.send('{"kind":"ping"}')
        while json.loads(await client.recv())["kind"] != "pong":
            pass
        samples.append((time.perf_counter() - began) * 1000)
        await asyncio.sleep(0.01)
    print(json.dumps(samples), flush=True)
    await client.close()


T = TypeVar("T")


async def while_pinging(url: str, work: Awaitable[T]) -> tuple[list[float], T]:
    """`work`'s result, and the ping round trips measured while it ran."""
    pinger = await asyncio.create_subprocess_exec(
        sys.executable, "-P", __file__, "ping", url,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert pinger.stdin is not None
    assert pinger.stdout is not None
    assert (await pinger.stdout.readline()).strip() == b"ready"
    try:
        result = await work
    finally:
        pinger.stdin.close()
    out, _ = await pinger.communicate()
    samples: list[float] = json.loads(out)
    return samples, result


def row(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"| {name} | {len(samples)} | {statistics.median(samples):.2f} | {p99:.2f} |"
        f" {ordered[-1]:.2f} |"
    )


async def snapshots(
    client: ClientConnection, rounds: int, phase_s: float
) -> tuple[list[float], int]:
    """Session snapshots, `rounds` at least and for `phase_s` at least: each one's
    milliseconds, and the largest frame's bytes."""
    taken, size = [], 0
    until = time.monotonic() + phase_s
    while len(taken) < rounds or time.monotonic() < until:
        took, bytes_ = await snapshot(client)
        taken.append(took * 1000)
        size = max(size, bytes_)
    return taken, size


async def reads(tree: Path, rounds: int, phase_s: float) -> tuple[list[float], list[float]]:
    """`scan` and `read_diff` run here, as `snapshots` paces them: each one's milliseconds."""
    from forge.workers.trees.gitstate import read_diff, scan

    scans: list[float] = []
    diffs: list[float] = []
    until = time.monotonic() + phase_s
    while len(scans) < rounds or time.monotonic() < until:
        began = time.perf_counter()
        found = await scan(tree)
        scanned = time.perf_counter()
        await read_diff(tree, found)
        scans.append((scanned - began) * 1000)
        diffs.append((time.perf_counter() - scanned) * 1000)
    return scans, diffs


async def moves(held: ClientConnection, tree: Path, files: int, rounds: int) -> list[float]:
    """A 50-file change under a held seat, `rounds` times: ms until its `work_changed`."""
    pushes = []
    for n in range(rounds):
        began = time.perf_counter()
        # each move changes its files by another count of lines, so each is news to the row
        await asyncio.to_thread(change, tree, files, 50, n + 2)
        while True:
            frame = json.loads(await held.recv())
            if frame["kind"] == "update" and "work_changed" in frame["update"]:
                pushes.append((time.perf_counter() - began) * 1000)
                break
    return pushes


def line(label: str, name: str, values: list[float], size: str = "") -> str:
    return (
        f"| {label} | {name} | {statistics.median(values):.0f} | {min(values):.0f} |"
        f" {max(values):.0f} | {size} |"
    )


async def drive(args: argparse.Namespace, folder: Path) -> None:
    tree = folder / "tree"
    began = time.perf_counter()
    await asyncio.to_thread(make_repo, tree, args.files)
    print(f"repository: {args.files} files, built in {time.perf_counter() - began:.1f} s")
    config = folder / "forge.toml"
    config.write_text(
        f'[server]\nport = {args.port}\n[[projects]]\norg = "acme"\nname = "proj"\n'
        f'path = "{tree}"\n'
    )
    server = await asyncio.create_subprocess_exec(
        sys.executable, "-P", __file__, "serve", str(config),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert server.stdout is not None
    assert server.stdin is not None
    assert (await server.stdout.readline()).strip() == b"ready"
    url = f"ws://127.0.0.1:{args.port}/socket"
    reader = await greeted(url)
    latencies = [("idle", (await while_pinging(url, asyncio.sleep(args.phase_s)))[0])]
    table = []
    for label, changed in (("clean", 0), (f"{args.changed} modified", args.changed)):
        if changed:
            await asyncio.to_thread(change, tree, args.files, changed, 1)
        pinged, (taken, size) = await while_pinging(
            url, snapshots(reader, args.rounds, args.phase_s)
        )
        latencies.append((f"snapshots, {label} tree", pinged))
        table.append(line(label, "session snapshot over the socket", taken, str(size)))
        pinged, (scans, diffs) = await while_pinging(url, reads(tree, args.rounds, args.phase_s))
        latencies.append((f"the same reads run outside the supervisor, {label} tree", pinged))
        table.append(line(label, "scan: work row + git layer", scans))
        table.append(line(label, "read_diff: both layers, capped", diffs))
    held = await greeted(url)
    await held.send(json.dumps({"kind": "subscribe", "what": {"session": SEAT}}))
    while json.loads(await held.recv())["kind"] != "snapshot":
        pass
    pinged, pushes = await while_pinging(url, moves(held, tree, args.files, args.rounds))
    latencies.append(("a held seat's tree changing (watch + rescans)", pinged))
    print("\n| tree | read | median ms | min ms | max ms | frame bytes |")
    print("|---|---|---|---|---|---|")
    print("\n".join(table))
    print(
        f"\nwork_changed after a 50-file change: median {statistics.median(pushes):.0f} ms,"
        f" max {max(pushes):.0f} ms ({len(pushes)} changes)"
    )
    print("\n| ping while | pings | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|")
    for name, samples in latencies:
        print(row(name, samples))
    print(f"\nload average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    await reader.close()
    await held.close()
    server.stdin.close()
    await server.wait()


def main() -> None:
    if sys.argv[1:2] == ["serve"]:
        asyncio.run(serve(Path(sys.argv[2])))
        return
    if sys.argv[1:2] == ["ping"]:
        asyncio.run(ping(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--changed", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--port", type=int, default=18795)
    parser.add_argument("--phase-s", type=float, default=15.0, help="the least time per phase")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as name:
        asyncio.run(drive(args, Path(name)))


if __name__ == "__main__":
    main()
