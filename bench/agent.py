"""Agent seat benchmark: a text delta's way to a socket client, and an idle seat's memory.

    .venv/bin/python -P bench/agent.py [--turns N] [--settle S]

Needs the `agent` extra (the SDK and the Claude Code CLI its wheel bundles). Everything runs on
this machine against forge's scripted model server (`forge.testing.model_server`), in one
process that also holds every client, so both ends of each figure read one clock.

1. **Delta -> frame.** Each turn's reply is held by the model server just before its first text
   delta; after `--settle` seconds of quiet the bench releases it, and the server's `on_sent`
   hook stamps the moment the delta left. *forge*: a real `forge supervise` (its own process)
   with one agent seat (its worker process and the CLI under it); the time is taken when the
   `chat_appended` delta frame arrives on a websocket client holding the seat's session, before
   the frame is parsed. *floor*: the SDK's `ClaudeSDKClient` (the same CLI, the options the
   worker gives it) in this process, the time taken when its `StreamEvent` text delta is read.
   *relay*: the same SDK client in a child process that writes a line to its stdout per delta
   (the one process hop any seat kept out of the serving process pays; forge has two, worker
   -> supervisor -> client). The three alternate turn by turn; the first turn of each is a
   warm-up and not counted. Goal (issue 39): forge's p50 <= 1.2x the floor's p50 + 5 ms.
2. **Idle memory.** Once all sit idle after the same number of turns: RSS and PSS of forge's
   seat (the worker and every process under it: the CLI and its children) beside the floor's CLI
   process tree (the bare CLI the SDK started; the SDK's own Python is this bench), and beside the
   relay's child (a Python holding the SDK's client, and its CLI). Goal: <= 1.2x the bare CLI.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from forge.procs import descendants
from forge.testing.model_replies import Event
from forge.testing.model_script import parse_script
from forge.testing.model_server import QUIET_CLI_ENV, ModelServer, RecordedRequest
from forge.testing.person import free_port
from forge.testing.supervised import Supervised, Supervisors
from forge.workers.agent.locate import find_cli, require_sdk

SEAT = {"org": "acme", "project": "web", "label": "bench"}
WITHIN_S = 180.0
"""How long one step may take before the bench gives up (the CLI is slow on a loaded machine)."""


@dataclass
class Stamps:
    """When each request's first text delta left the server, by request number."""

    sent: dict[int, float] = field(default_factory=dict)

    def on_sent(self, request: RecordedRequest, event: Event) -> None:
        if event.delta and request.number not in self.sent:
            self.sent[request.number] = time.perf_counter()


@dataclass
class Side:
    """One client's view of its turns: when each turn's first delta arrived, and turn ends."""

    arrived: list[float] = field(default_factory=list)
    ends: int = 0
    change: asyncio.Event = field(default_factory=asyncio.Event)

    def delta(self, at: float | None = None) -> None:
        self.arrived.append(time.perf_counter() if at is None else at)
        self._changed()

    def ended(self) -> None:
        self.ends += 1
        self._changed()

    def _changed(self) -> None:
        self.change.set()
        self.change = asyncio.Event()

    async def until(self, holds: Callable[[], bool]) -> None:
        async with asyncio.timeout(WITHIN_S):
            while not holds():
                await self.change.wait()


def quiet_environment(root: Path) -> None:
    """Give this process (and so the supervisor, its workers and every CLI) a fresh HOME,
    Claude config and XDG tree; no outer model, proxy or Claude setting may steer them."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "CLAUDE", "OTEL_")) or name.lower().endswith("_proxy"):
            del os.environ[name]
    os.environ.pop("FORGE_CONFIG", None)
    for name, sub in (
        ("HOME", "home"),
        ("CLAUDE_CONFIG_DIR", "claude-config"),
        ("XDG_CONFIG_HOME", "xdg-config"),
        ("XDG_STATE_HOME", "xdg-state"),
        ("XDG_RUNTIME_DIR", "xdg-runtime"),
    ):
        (root / sub).mkdir(mode=0o700)
        os.environ[name] = str(root / sub)
    os.environ["ANTHROPIC_API_KEY"] = "bench-key-not-a-secret"
    os.environ.update(QUIET_CLI_ENV)


def script(turns: int) -> dict[str, Any]:
    """Each side's turns, each held before its first delta until released."""
    return {
        "turns": [
            {"when": {"user_text": f"{who} {n}."}, "say": f"Answer {n}.", "stall": {"after": 0}}
            for who in ("Forge", "Floor", "Relay")
            for n in range(turns)
        ]
    }


async def forge_seat(project: Path, root: Path) -> tuple[Supervised, Any, Side]:
    """A real `forge supervise` with an agent spawned on SEAT; a websocket client holding the
    seat's session, its delta arrivals stamped before parsing."""
    supervisors = Supervisors(root / "forge.toml", free_port())
    toml = f'[[projects]]\norg = "acme"\nname = "web"\npath = "{project}"\n'
    supervised = await supervisors.start(toml, drills=False, log_level=None)
    client = await supervised.greeted()
    await client.send(
        json.dumps({"kind": "command", "command": {"spawn": {"key": SEAT}}, "reply_to": 1})
    )
    async with asyncio.timeout(WITHIN_S):
        while (reply := json.loads(await client.recv()))["kind"] != "reply":
            pass
    if not reply["body"].get("ok"):
        raise SystemExit(f"the agent seat did not start: {reply['body']}")
    await client.send(json.dumps({"kind": "subscribe", "what": {"session": SEAT}}))
    side = Side()

    async def read() -> None:
        async for text in client:
            arrived = time.perf_counter()
            frame = json.loads(text)
            update = frame.get("update") if frame["kind"] == "update" else None
            if not isinstance(update, dict):
                continue
            if (message := update.get("chat_appended", {}).get("msg")) is not None:
                if message["type"] == "delta" and message["kind"] == "text":
                    side.delta(arrived)
            elif update.get("prompt_lifecycle", {}).get("phase") == "ended":
                side.ended()

    asyncio.get_running_loop().create_task(read())
    return supervised, client, side


async def sdk_client(
    project: Path, cli: Path, on_delta: Callable[[], None], on_end: Callable[[], None]
) -> Any:
    """The SDK's client with the options forge's worker gives it, connected, its messages read
    by a task that calls `on_delta` for each text delta and `on_end` at each turn's result."""
    from claude_agent_sdk import (
        ClaudeAgentOptions,
        ClaudeSDKClient,
        PermissionResultAllow,
        ResultMessage,
        StreamEvent,
    )

    async def allow(*_: Any) -> PermissionResultAllow:
        return PermissionResultAllow()

    options = ClaudeAgentOptions(
        cwd=str(project),
        cli_path=str(cli),
        permission_mode="default",
        can_use_tool=allow,
        include_partial_messages=True,
    )
    client = ClaudeSDKClient(options)
    await client.connect()

    async def read() -> None:
        async for message in client.receive_messages():
            if isinstance(message, StreamEvent):
                event = message.event
                if event.get("type") == "content_block_delta" and (
                    event.get("delta", {}).get("type") == "text_delta"
                ):
                    on_delta()
            elif isinstance(message, ResultMessage):
                on_end()

    asyncio.get_running_loop().create_task(read())
    return client


async def relay_child(project: Path) -> None:
    """The relay floor's child: an SDK client whose prompts come as stdin lines and whose
    deltas and turn ends leave as stdout lines."""
    client = await sdk_client(
        project,
        find_cli(None, require_sdk()),
        lambda: print("delta", flush=True),
        lambda: print("end", flush=True),
    )
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        await client.query(line.strip())
    await client.disconnect()


async def relay_floor(project: Path) -> tuple[asyncio.subprocess.Process, Side]:
    """The SDK in a child process (the one process hop a seat outside the supervisor needs at
    least), its deltas read here from its stdout."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-P", __file__, "--relay-child", str(project),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    side = Side()
    assert child.stdout is not None

    async def read() -> None:
        assert child.stdout is not None
        async for line in child.stdout:
            if line == b"delta\n":
                side.delta()
            elif line == b"end\n":
                side.ended()

    asyncio.get_running_loop().create_task(read())
    return child, side


async def one_turn(
    server: ModelServer,
    stamps: Stamps,
    side: Side,
    send: Callable[[str], Awaitable[None]],
    text: str,
    settle: float,
) -> float:
    """Prompt `text`, hold its reply before the first delta, release it after `settle` seconds
    of quiet; the seconds from the delta leaving the server to its arrival at the client."""
    deltas, ends = len(side.arrived), side.ends
    await send(text)
    async with asyncio.timeout(WITHIN_S):
        held = await server.wait_stalled()
    await asyncio.sleep(settle)
    server.release()
    await side.until(lambda: len(side.arrived) > deltas)
    await side.until(lambda: side.ends > ends)
    return side.arrived[deltas] - stamps.sent[held.number]


@dataclass(frozen=True)
class Memory:
    """RSS and PSS summed over a process tree, in bytes, and how many processes it holds."""

    rss: int
    pss: int
    processes: int

    def __add__(self, other: Memory) -> Memory:
        return Memory(self.rss + other.rss, self.pss + other.pss, self.processes + other.processes)

    def __str__(self) -> str:
        mib = 1024 * 1024
        return f"RSS {self.rss / mib:6.1f} MiB  PSS {self.pss / mib:6.1f} MiB  ({self.processes})"


def tree_memory(root_pid: int, *, alone: bool = False) -> Memory:
    """`root_pid` and every process under it (only itself when `alone`)."""
    total = Memory(0, 0, 0)
    for pid in [root_pid] if alone else [root_pid, *descendants(root_pid)]:
        info = psutil.Process(pid).memory_full_info()
        total += Memory(info.rss, info.pss, 1)
    return total


@dataclass
class Figures:
    forge_s: list[float]
    floor_s: list[float]
    relay_s: list[float]
    seat: Memory
    worker: Memory
    floor_cli: Memory
    relay: Memory
    unscripted: int


async def measure(turns: int, settle: float, cli: Path, root: Path, project: Path) -> Figures:
    stamps = Stamps()
    async with ModelServer(parse_script(script(turns + 1)), on_sent=stamps.on_sent) as server:
        os.environ["ANTHROPIC_BASE_URL"] = server.url
        supervised, ws, forge_side = await forge_seat(project, root)
        floor_side = Side()
        floor = await sdk_client(project, cli, floor_side.delta, floor_side.ended)
        relay, relay_side = await relay_floor(project)
        assert relay.stdin is not None
        relay_in = relay.stdin
        try:

            async def to_forge(text: str) -> None:
                prompt = {"prompt": {"key": SEAT, "text": text}}
                await ws.send(json.dumps({"kind": "command", "command": prompt}))

            async def to_relay(text: str) -> None:
                relay_in.write(f"{text}\n".encode())
                await relay_in.drain()

            sides = (
                ("Forge", forge_side, to_forge),
                ("Floor", floor_side, floor.query),
                ("Relay", relay_side, to_relay),
            )
            times: dict[str, list[float]] = {who: [] for who, _, _ in sides}
            for n in range(turns + 1):
                for who, side, send in sides:
                    took = await one_turn(server, stamps, side, send, f"{who} {n}.", settle)
                    if n > 0:
                        times[who].append(took)
            await asyncio.sleep(settle * 5)
            worker = (await supervised.record("worker_spawned", kind="agent"))["pid"]
            [floor_pid] = [
                child.pid for child in psutil.Process().children()
                if child.pid not in (supervised.process.pid, relay.pid)
            ]  # fmt: skip
            return Figures(
                forge_s=times["Forge"],
                floor_s=times["Floor"],
                relay_s=times["Relay"],
                seat=tree_memory(worker),
                worker=tree_memory(worker, alone=True),
                floor_cli=tree_memory(floor_pid),
                relay=tree_memory(relay.pid),
                unscripted=sum(r.outcome == "unscripted" for r in server.requests),
            )
        finally:
            relay_in.close()
            await relay.wait()
            with contextlib.suppress(Exception):
                await floor.disconnect()
            await supervised.stop()


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def latency(name: str, values: list[float], what: str) -> tuple[float, float]:
    p50, p90 = percentile(values, 50), percentile(values, 90)
    print(f"delta->frame  {name:5}  p50 {ms(p50)}  p90 {ms(p90)}  ({what})")
    return p50, p90


def report(figures: Figures, turns: int, settle: float, header: str) -> None:
    print(header)
    print(f"# {turns} turns a side after one warm-up each, alternating; settle {settle} s; "
          f"requests no turn answered: {figures.unscripted}")  # fmt: skip
    fp50, fp90 = latency("forge", figures.forge_s, "forge supervise, its worker, the CLI")
    bp50, bp90 = latency("floor", figures.floor_s, "ClaudeSDKClient in this process, the CLI")
    rp50, rp90 = latency("relay", figures.relay_s, "ClaudeSDKClient in a child, lines on a pipe")
    goal = 1.2 * bp50 + 0.005
    print(f"delta->frame  forge/floor  p50 {fp50 / bp50:.2f}x  p90 {fp90 / bp90:.2f}x; goal p50 "
          f"<= 1.2x floor + 5 ms = {ms(goal)}: {'met' if fp50 <= goal else 'missed'}")  # fmt: skip
    print(f"delta->frame  forge/relay  p50 {fp50 / rp50:.2f}x  p90 {fp90 / rp90:.2f}x")
    print(f"idle memory   forge seat         {figures.seat}  (the worker alone: {figures.worker})")
    print(f"idle memory   floor: bare CLI    {figures.floor_cli}")
    print(f"idle memory   relay: SDK + CLI   {figures.relay}")
    seat, bare, relay = figures.seat, figures.floor_cli, figures.relay
    print(f"idle memory   forge/bare CLI  RSS {seat.rss / bare.rss:.2f}x  PSS "
          f"{seat.pss / bare.pss:.2f}x; goal <= 1.2x: "
          f"{'met' if seat.pss <= 1.2 * bare.pss else 'missed'} (PSS)")  # fmt: skip
    print(f"idle memory   forge/relay  RSS {seat.rss / relay.rss:.2f}x  "
          f"PSS {seat.pss / relay.pss:.2f}x")  # fmt: skip


def main(turns: int, settle: float) -> int:
    started = datetime.datetime.now(datetime.UTC)
    load_before = os.getloadavg()
    cli = find_cli(None, require_sdk())
    version = cli.parent / "claude.version"
    with tempfile.TemporaryDirectory(prefix="forge-bench-agent-") as tmp:
        root = Path(tmp)
        quiet_environment(root)
        project = root / "web"
        subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
        figures = asyncio.run(measure(turns, settle, cli, root, project))
    load_after = os.getloadavg()
    header = (
        f"# bench/agent.py: {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, {started:%Y-%m-%d %H:%M} UTC, load average "
        f"{load_before[0]:.1f} -> {load_after[0]:.1f}; "
        f"CLI {version.read_text().strip() if version.exists() else cli}"
    )
    report(figures, turns, settle, header)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=30, help="measured turns per side")
    parser.add_argument("--settle", type=float, default=0.2, help="quiet seconds before a delta")
    parser.add_argument("--relay-child", type=Path, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.relay_child is not None:
        sys.exit(asyncio.run(relay_child(arguments.relay_child)))
    if arguments.turns < 2:
        parser.error("--turns must be at least 2 (a p50 and a p90 need two turns)")
    sys.exit(main(arguments.turns, arguments.settle))
