"""Chaos and soak: a real `forge supervise` under mixed load for N minutes, faults injected on a
seeded schedule, invariants checked while it runs.

    .venv/bin/python -P bench/chaos.py [--minutes 60] [--seed S] [--out chaos-out]

Load, all at once: four terminals (a numbered flood, a shell typed into at human pace, a build
log, a full-screen program on the alternate screen), each with its controller and 0-2 watchers,
one of them a phone that stops reading for 30-120 s and wakes; two browser profiles on an
animated page with 1-4 viewers, taps and navigations; the process walker on the held terminal
seats; a Lab cohort (`forge evaluate --parallel 2`) run again and again; gh calls through the
shim against the stateful fake, with outages switched on and off.

Faults (seeded): kill -9 of a terminal, browser or walker worker; SIGSTOP then SIGCONT of one
(short: a pause; long: a hang the watchdog must end); kill -9 of a Lab attempt runner (the round
resumes); a client whose TCP ends in a reset; a half-open client (never reads, never pongs); a
client sending hostile frames that Hypothesis draws from forge.wire's own definitions
(`bench/hostile.py`: every client struct wrong in one place, cut short or not an object, unknown
kinds, not JSON, truncated and wrong-kind binary frames), then one frame over the 16 MiB bound;
during a gh outage, a gh write with no room to spool its queue entry; a broken forge.toml then a
good one; SIGHUP.

Invariants (`bench/chaos_checks.py`, pure): terminal frames contiguous between fresh views and
the shells' own numbered lines unbroken; browser frame seq never backwards; every request
answered within its bound; every killed worker recovered or reported; the other workers
untouched; every hostile text frame answered with an error on a connection that stays (a ping
after the binary ones gets its pong), the oversized frame closed with 1009; ping p99 under 50 ms
or under 2x a bare websockets echo server's; the supervisor's RSS and fd slopes after warm-up;
no process left after stop; the Lab's verdicts equal a first run's; no accepted gh write lost or
duplicated, and a write with no room refused loudly. Each violation prints with its time and the
seed, with the tail of the event log, and the exit status is 1. A hostile client's frames replay
alone: `python -P bench/hostile.py SEED`, SEED as its FAULT line prints it.
"""

from __future__ import annotations

import sys

# bench/ holds a socket.py: keep this folder off sys.path so `import socket` is the stdlib's.
if sys.path[0] == __file__.rpartition("/")[0]:
    sys.path.pop(0)

import argparse
import asyncio
import compileall
import contextlib
import itertools
import json
import os
import platform
import random
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import tracemalloc
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import psutil
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from forge.client.auth import subprotocols
from forge.files import write_atomic
from forge.testing.pages import page_of, serve_in_thread
from forge.testing.person import free_port
from forge.wire.binary import BROWSER_FRAME_HEADER, TERMINAL_OUTPUT_HEADER, terminal_input

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the Lab's test kit: the Lab load runs what the Lab tests run

from tests.bench.scripts import load  # noqa: E402
from tests.lab.kit import Kit  # noqa: E402

SESSION_ENDS = (
    TimeoutError, ConnectionError, ConnectionClosed, InvalidHandshake, RuntimeError, OSError,
)  # fmt: skip
"""What ends a client's session (a bound broken, a connection dropped, a refusal, an opening
handshake that failed): start over, as the web page does."""


checks = load("chaos_checks")
heapmap = load("heapmap")
HOSTILE = ROOT / "bench" / "hostile.py"
hostile = load("hostile")

ACK_EVERY = 64 * 1024
"""A terminal viewer acks each time it has read this many more bytes, as forge's page does."""
ASK_BOUND_S = 30.0
"""A request with `reply_to` (or a ping) unanswered after this is a violation."""
OPEN_BOUND_S = 90.0
"""browser_open starts a Chromium: on 2 busy cores that can take a while."""
RECOVERY_BOUND_S = 90.0
"""A killed worker's row must say recovered or reported within this (backoff is at most 30 s)."""
HALF_OPEN_BOUND_S = 15 + 60 + 20
"""ping_interval_s + ping_timeout_s (the defaults) and slack: a silent peer must be dropped."""
PAGE = """<!doctype html><body style="margin:0"><canvas id=c width=640 height=360></canvas><script>
const x = document.getElementById('c').getContext('2d'); let h = 0, m = '#f00';
addEventListener('pointerdown', () => { m = m === '#f00' ? '#00f' : '#f00'; });
(function f() { h = (h + 3) % 360; x.fillStyle = `hsl(${h},70%,50%)`; x.fillRect(0, 0, 640, 360);
for (let i = 0; i < 60; i++) { x.fillStyle = `hsl(${(h + i * 7) % 360},80%,60%)`;
x.fillRect((i * 37 + h * 5) % 640, (i * 53) % 360, 30, 30); }
x.fillStyle = m; x.fillRect(0, 0, 80, 80);
x.fillStyle = '#000'; x.fillText(location.pathname, 100, 20);
requestAnimationFrame(f); })();
</script>"""

# The terminal workloads, typed into bash. Markers <Xn> count up by one, so every viewer can
# check the shell's own bytes; the command as echoed holds `<F"`, never `<F<digit>`.
FLOOD = (
    'awk \'BEGIN{for(i=1;;i++){printf "<F" i "> %s\\n", "................................'
    '.............................."; if(i%RATE==0){fflush(); system("sleep 0.1")}}}\'\r'
)
BUILD = (
    'i=0; while :; do i=$((i+1)); echo "<B""$i> cc -O2 -c src/module_$i.c -o build/module_$i.o";'
    " sleep 0.05; done\r"
)
SCREEN = (
    "while :; do printf '\\033[?1049h\\033[H\\033[2J'; for r in 1 2 3 4 5 6 7 8 9 10; do "
    "printf \"row %s %s\\n\" $r $(date +%N); done; sleep 0.3; printf '\\033[?1049l'; "
    "sleep 0.2; done\r"
)


@dataclass
class Run:
    """Everything the run records: violations, faults, figures, and the event log."""

    seed: int
    started: float = field(default_factory=time.monotonic)
    events: deque[str] = field(default_factory=lambda: deque(maxlen=400))
    violations: list[tuple[float, str, str]] = field(default_factory=list)
    faults: dict[str, int] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    pings: list[tuple[float, float, float]] = field(default_factory=list)
    """(when, forge ms, bare ms) per pair of pings, for the worst ones' moments."""
    stopping: bool = False
    log_file: Any = None

    def now(self) -> float:
        return time.monotonic() - self.started

    def event(self, text: str) -> None:
        line = f"{self.now():8.1f}s {text}"
        self.events.append(line)
        if self.log_file is not None:
            self.log_file.write(line + "\n")
            self.log_file.flush()

    def violate(self, rule: str, detail: str) -> None:
        self.violations.append((self.now(), rule, detail))
        self.event(f"VIOLATION {rule}: {detail}")
        if sum(1 for _, r, _ in self.violations if r == rule) > 20:
            return  # counted and logged; the terminal is not flooded with one rule's repeats
        print(
            f"VIOLATION at {self.now():.1f}s (seed {self.seed}) {rule}: {detail}",
            file=sys.stderr,
            flush=True,
        )

    def count(self, name: str, by: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + by

    def fault(self, kind: str, detail: str) -> None:
        self.faults[kind] = self.faults.get(kind, 0) + 1
        self.event(f"FAULT {kind}: {detail}")


# --- clients ------------------------------------------------------------------------------


Answer = dict[str, Any] | None
"""What a client sends back on reading a frame, before it reads the next (a terminal's ack)."""


class Conn:
    """One socket client: a reader that may be paused (a phone asleep), asks with bounds."""

    def __init__(self, run: Run, url: str, name: str, on_frame: Callable[[Any], Answer]) -> None:
        self.run, self.url, self.name, self.on_frame = run, url, name, on_frame
        self.ws: ClientConnection | None = None
        self.awake = asyncio.Event()
        self.awake.set()
        self.replies: dict[int, asyncio.Future[Any]] = {}
        self.next_key = 0
        self.reader: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()

    async def open(self, query: str = "") -> None:
        self.closed.clear()
        self.ws = await dial(self.run, self.name, self.url + query, max_size=None, max_queue=16)
        self.reader = asyncio.create_task(self._read(self.ws))

    async def _read(self, ws: ClientConnection) -> None:
        try:
            while True:
                await self.awake.wait()
                message = await ws.recv()
                if isinstance(message, str):
                    decoded = json.loads(message)
                    if decoded.get("kind") == "reply":
                        future = self.replies.pop(decoded.get("reply_to"), None)
                        if future is not None and not future.done():
                            future.set_result(decoded.get("body"))
                            continue
                    answer = self.on_frame(decoded)
                else:
                    answer = self.on_frame(message)
                if answer is not None:
                    await ws.send(json.dumps(answer))
        except ConnectionClosed:
            pass
        finally:
            self.closed.set()
            for future in self.replies.values():
                if not future.done():
                    future.set_exception(ConnectionError("closed"))
            self.replies.clear()

    async def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.ws is not None
        await self.ws.send(message if isinstance(message, bytes) else json.dumps(message))

    async def ask(self, message: dict[str, Any], bound: float = ASK_BOUND_S) -> Any:
        """Send with a fresh `reply_to`; an answer later than `bound` is a violation."""
        self.next_key += 1
        key = self.next_key
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.replies[key] = future
        await self.send({**message, "reply_to": key})
        try:
            async with asyncio.timeout(bound):
                return await future
        except TimeoutError:
            self.run.violate("request_bound", f"{self.name}: {message['kind']} unanswered {bound}s")
            raise

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await self.ws.close()
        if self.reader is not None:
            self.reader.cancel()
            with contextlib.suppress(BaseException):
                await self.reader


# --- terminals ----------------------------------------------------------------------------


@dataclass
class TerminalPlan:
    name: str
    seat: dict[str, str]
    workload: str
    watchers: int
    phone: bool


class TerminalViewer:
    """One viewer of a seat's terminal: checks every chunk; re-views when told the host died.
    Like forge's page it acks (`terminal_ack`) its view's seq and each 64 KiB it has read, so
    the controller's acks pace its shell through every fault."""

    def __init__(self, run: Run, url: str, plan: TerminalPlan, role: str, rng: random.Random):
        self.run, self.url, self.plan, self.role, self.rng = run, url, plan, role, rng
        self.name = f"{plan.name}/{role}"
        self.conn = Conn(run, url, self.name, self.on_frame)
        self.seq = checks.TerminalSeq()
        self.lines = checks.NumberedLines()
        self.terminal: int | None = None
        self.reviews = asyncio.Queue[str]()
        self.output = bytearray()
        self.told = 0
        self.unacked = 0

    def on_frame(self, frame: Any) -> Answer:
        if isinstance(frame, dict):
            kind = frame.get("kind")
            if kind == "terminal_view" and frame.get("seat") == self.plan.seat:
                self.terminal = frame["id"]
                self.seq.view(frame["seq"])
                self.lines.reset()
                self.output += frame["screen"].encode()
                self.run.count("terminal_views")
                self.unacked = 0
                return {"kind": "terminal_ack", "seq": frame["seq"]}
            if kind == "error":
                what = frame.get("what")
                if what in ("terminal_view", "terminal_close"):
                    self.told += 1
                    self.run.count("terminal_host_stopped_told")
                    self.run.event(f"{self.name}: told {frame.get('why')}")
                    self.reviews.put_nowait("told")
                elif what not in ("terminal_control", "terminal_resize"):
                    self.run.event(f"{self.name}: error {frame}")
            return None
        if not frame or frame[0] != 4:
            return None
        _, terminal, seq = TERMINAL_OUTPUT_HEADER.unpack_from(frame)
        if terminal != self.terminal:
            return None
        data = bytes(frame[TERMINAL_OUTPUT_HEADER.size :])
        self.run.count("terminal_bytes", len(data))
        problem = self.seq.chunk(seq)
        if problem:
            self.run.violate("terminal_seq", f"{self.name} terminal {terminal}: {problem}")
        for problem in self.lines.feed(data):
            self.run.violate("terminal_bytes", f"{self.name} terminal {terminal}: {problem}")
        self.output += data
        if len(self.output) > 1 << 16:
            del self.output[: -(1 << 15)]
        self.unacked += len(data)
        if self.unacked < ACK_EVERY:
            return None
        self.unacked = 0
        return {"kind": "terminal_ack", "seq": seq}

    async def view(self) -> int:
        body = await self.conn.ask({"kind": "terminal_view", "seat": self.plan.seat})
        if not body.get("ok"):
            raise RuntimeError(f"{self.name}: view refused: {body.get('why')}")
        return int(body["id"])

    async def connect(self) -> int:
        await self.conn.open()
        return await self.view()


class TerminalActor:
    """A seat's terminal: the controller starts the workload, watchers and a phone look on."""

    def __init__(self, run: Run, url: str, plan: TerminalPlan, rng: random.Random) -> None:
        self.run, self.url, self.plan, self.rng = run, url, plan, rng
        self.controller = TerminalViewer(run, url, plan, "controller", rng)
        self.watchers = [
            TerminalViewer(run, url, plan, "phone" if plan.phone and i == 0 else f"watcher{i}", rng)
            for i in range(plan.watchers)
        ]

    async def run_forever(self) -> None:
        tasks = []
        for viewer in [self.controller, *self.watchers]:
            try:
                await self.attach(viewer)
            except SESSION_ENDS as error:
                self.run.event(f"{viewer.name}: first view failed: {error!r}")
                viewer.conn.closed.set()
            loop = (
                self.keep_controller() if viewer is self.controller else self.keep_watcher(viewer)
            )
            tasks.append(asyncio.create_task(loop))
        if self.plan.workload == "shell":
            tasks.append(asyncio.create_task(self.type_like_a_person()))
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    async def start_controller(self, terminal: int) -> None:
        await self.controller.conn.send(
            {"kind": "terminal_control", "seat": self.plan.seat, "id": terminal, "take": True}
        )
        workload = {"flood": FLOOD, "build": BUILD, "screen": SCREEN}.get(self.plan.workload)
        if workload:
            await asyncio.sleep(0.5)
            await self.controller.conn.send(
                terminal_input(terminal=terminal, data=workload.encode())
            )
        self.run.event(f"{self.plan.name}: controller on terminal {terminal}")

    async def keep_controller(self) -> None:
        await self.resilient(self.controller, self._keep_controller)

    async def resilient(
        self, viewer: TerminalViewer, loop: Callable[[TerminalViewer], Awaitable[None]]
    ) -> None:
        """Run a viewer's loop; a request that broke its bound (already a violation) or a
        connection that failed is started over on a fresh connection."""
        while not self.run.stopping:
            try:
                await loop(viewer)
                return
            except SESSION_ENDS as error:
                self.run.event(f"{viewer.name}: starting over after {error!r}")
                await viewer.conn.close()
                viewer.conn.awake.set()
                await asyncio.sleep(2)
                with contextlib.suppress(*SESSION_ENDS):
                    await self.attach(viewer)

    async def attach(self, viewer: TerminalViewer) -> None:
        """Connect and view; the controller takes control and types its workload."""
        terminal = await viewer.connect()
        if viewer is self.controller:
            await self.start_controller(terminal)

    async def _keep_controller(self, viewer: TerminalViewer) -> None:
        while not self.run.stopping:
            closed = asyncio.create_task(viewer.conn.closed.wait())
            told = asyncio.create_task(viewer.reviews.get())
            await asyncio.wait({closed, told}, return_when=asyncio.FIRST_COMPLETED)
            closed.cancel()
            told.cancel()
            if self.run.stopping:
                return
            await asyncio.sleep(1)
            if viewer.conn.closed.is_set():
                self.run.event(f"{viewer.name}: connection closed, reconnecting")
                await viewer.conn.close()
                await self.start_controller(await viewer.connect())
            else:
                await self.start_controller(await viewer.view())

    async def keep_watcher(self, viewer: TerminalViewer) -> None:
        await self.resilient(viewer, self._keep_watcher)

    async def _keep_watcher(self, viewer: TerminalViewer) -> None:
        phone = viewer.role == "phone"
        while not self.run.stopping:
            waits = {
                asyncio.create_task(viewer.conn.closed.wait()),
                asyncio.create_task(viewer.reviews.get()),
            }
            if phone:
                waits.add(asyncio.create_task(asyncio.sleep(self.rng.uniform(30, 150))))
            done, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            if self.run.stopping:
                return
            if (
                phone
                and not viewer.conn.closed.is_set()
                and viewer.reviews.empty()
                and all(isinstance(t.result(), type(None)) for t in done)
            ):
                nap = self.rng.uniform(30, 120)
                self.run.count("phone_sleeps")
                self.run.event(f"{viewer.name}: sleeps {nap:.0f}s")
                viewer.conn.awake.clear()
                await asyncio.sleep(nap)
                viewer.conn.awake.set()
                self.run.event(f"{viewer.name}: wakes")
                continue
            await asyncio.sleep(1.5)
            if viewer.conn.closed.is_set():
                self.run.count("viewer_reconnects")
                self.run.event(f"{viewer.name}: connection closed, reconnecting")
                await viewer.conn.close()
                viewer.conn.awake.set()
                await viewer.connect()
            else:
                await viewer.view()

    async def type_like_a_person(self) -> None:
        """`echo <S$((n))>`-style lines a key at a time; the answer must show within the bound."""
        n = 0
        viewer = self.controller
        while not self.run.stopping:
            await asyncio.sleep(self.rng.uniform(1, 6))
            terminal = viewer.terminal
            if terminal is None or viewer.conn.closed.is_set():
                continue
            n += 1
            line = f"echo '<'S$(({n}))'>' typed\r"
            started = time.monotonic()
            try:
                for char in line:
                    await asyncio.sleep(self.rng.uniform(0.03, 0.15))
                    await viewer.conn.send(terminal_input(terminal=terminal, data=char.encode()))
            except ConnectionClosed:
                continue
            started = time.monotonic()  # the answer's wait, from the Enter key
            wanted = f"<S{n}> typed".encode()
            while wanted not in viewer.output:
                if viewer.terminal != terminal or viewer.conn.closed.is_set():
                    break
                if time.monotonic() - started > ASK_BOUND_S:
                    self.run.violate("typed_echo", f"{viewer.name}: `{line.strip()}` not answered")
                    break
                await asyncio.sleep(0.05)
            else:
                self.run.count("typed_lines")
                self.run.figures.setdefault("typed_ms", []).append(
                    (time.monotonic() - started) * 1000
                )


# --- browsers -----------------------------------------------------------------------------


class BrowserViewer:
    def __init__(self, run: Run, url: str, name: str, jpeg: bool) -> None:
        self.run, self.name, self.jpeg = run, name, jpeg
        self.conn = Conn(run, url, name, self.on_frame)
        self.order = checks.FrameOrder()
        self.last_frame = time.monotonic()
        self.errors = asyncio.Queue[dict[str, Any]]()

    def on_frame(self, frame: Any) -> None:
        if isinstance(frame, dict):
            if frame.get("kind") == "error":
                self.errors.put_nowait(frame)
            return
        if not frame or frame[0] != 1 or len(frame) < BROWSER_FRAME_HEADER.size:
            return
        _, profile, tab, seq, *_ = BROWSER_FRAME_HEADER.unpack_from(frame)
        self.last_frame = time.monotonic()
        self.run.count("browser_frames")
        problem = self.order.frame(profile, tab, seq)
        if problem:
            self.run.violate("browser_seq", f"{self.name}: {problem}")

    async def open(self) -> None:
        await self.conn.open("?formats=webp,jpeg" if self.jpeg else "")


class BrowserActor:
    """One profile: the lead opens an animated tab, 1-4 viewers watch, the lead taps and
    navigates; after a host crash the lead opens a fresh tab and everyone views it."""

    def __init__(self, run: Run, url: str, name: str, seat: dict[str, str], page: str,
                 rng: random.Random) -> None:  # fmt: skip
        self.run, self.url, self.name, self.seat, self.page, self.rng = (
            run,
            url,
            name,
            seat,
            page,
            rng,
        )
        count = rng.randint(1, 4)
        self.viewers = [
            BrowserViewer(run, url, f"{name}/viewer{i}", jpeg=rng.random() < 0.5)
            for i in range(count)
        ]
        self.input_seq = 0

    async def run_forever(self) -> None:
        for viewer in self.viewers:
            await viewer.open()
        while not self.run.stopping:
            try:
                await self.session()
            except SESSION_ENDS as error:
                self.run.event(f"{self.name}: session ended: {error!r}")
            if self.run.stopping:
                return
            self.run.count("browser_reopens")
            await asyncio.sleep(3)
            for viewer in self.viewers:
                if viewer.conn.closed.is_set():
                    await viewer.conn.close()
                    await viewer.open()

    async def session(self) -> None:
        lead = self.viewers[0]
        for viewer in self.viewers:  # refusals of the last session's taps are not this one's
            while not viewer.errors.empty():
                viewer.errors.get_nowait()
        body = await lead.conn.ask(
            {"kind": "browser_open", "seat": self.seat, "url": self.page + "a"}, OPEN_BOUND_S
        )
        if "tab" not in body:
            raise RuntimeError(f"browser_open refused: {body}")
        tab = body["tab"]
        for viewer in self.viewers:
            viewer.order.reset()
            reply = await viewer.conn.ask(
                {"kind": "browser_view", "seat": self.seat, "tab": tab}, OPEN_BOUND_S
            )
            if isinstance(reply, dict) and reply.get("ok") is False:
                raise RuntimeError(f"browser_view refused: {reply}")
        await lead.conn.send({"kind": "browser_control", "take": True})
        self.run.event(f"{self.name}: tab {tab} open, {len(self.viewers)} viewers")
        page = "a"
        while not self.run.stopping:
            errors = [v.errors.get_nowait() for v in self.viewers if not v.errors.empty()]
            if errors:
                await asyncio.sleep(1)  # let the rest of what the crash said arrive
                raise RuntimeError(f"told: {errors[0]}")
            if any(v.conn.closed.is_set() for v in self.viewers):
                raise ConnectionError("a viewer's connection closed")
            await asyncio.sleep(self.rng.uniform(1, 4))
            if self.rng.random() < 0.15:
                page = "b" if page == "a" else "a"
                await lead.conn.send({"kind": "browser_navigate", "url": self.page + page})
                self.run.count("browser_navigations")
            else:
                for down in (True, False):
                    self.input_seq += 1
                    press = {"press": {"x": 40, "y": 40, "button": "left", "down": down}}
                    await lead.conn.send(
                        {"kind": "browser_input", "seq": self.input_seq, "event": press}
                    )
                self.run.count("browser_taps")


# --- monitor: home rows, held seats (the walker), pings -----------------------------------


class Monitor:
    """Holds `home` and the terminal seats' sessions: worker rows as they change, process
    walks, settings pushes."""

    def __init__(self, run: Run, url: str, seats: list[dict[str, str]]) -> None:
        self.run, self.seats = run, seats
        self.conn = Conn(run, url, "monitor", self.on_frame)
        self.rows: dict[str, dict[str, Any]] = {}
        self.settings_pushes = 0
        self.walked: dict[str, int] = {}

    def on_frame(self, frame: Any) -> None:
        if not isinstance(frame, dict):
            return
        kind = frame.get("kind")
        if kind == "settings":
            self.settings_pushes += 1
        elif kind == "snapshot" and frame.get("subject") == "home":
            self.set_rows(frame["data"].get("workers") or [])
        elif kind == "snapshot":
            self.walk(frame["subject"], frame["data"].get("processes"))
        elif kind == "update":
            update = frame.get("update")
            if isinstance(update, dict) and "workers_changed" in update:
                self.set_rows(update["workers_changed"]["workers"])
            elif isinstance(update, dict) and "processes_changed" in update:
                body = update["processes_changed"]
                self.walk({"session": body.get("key")}, body.get("processes"))

    def set_rows(self, rows: list[dict[str, Any]]) -> None:
        self.rows = {row["name"]: row for row in rows}

    def walk(self, subject: Any, processes: Any) -> None:
        if processes:
            key = json.dumps(subject, sort_keys=True)
            self.walked[key] = self.walked.get(key, 0) + 1
            self.run.count("process_walks")

    async def start(self) -> None:
        await self.conn.open()
        await self.conn.send({"kind": "subscribe", "what": "home"})

    async def hold_seats(self) -> None:
        """Hold every terminal seat's session (the walker walks held seats), taking a fresh
        snapshot each half minute; a seat not started yet is refused and asked again."""
        while not self.run.stopping:
            for seat in self.seats:
                await self.conn.send({"kind": "unsubscribe", "what": {"session": seat}})
                await self.conn.send({"kind": "subscribe", "what": {"session": seat}})
            await asyncio.sleep(30)

    def unwalked(self) -> list[str]:
        return [
            f"{seat['project']}/{seat['label']}"
            for seat in self.seats
            if not self.walked.get(json.dumps({"session": seat}, sort_keys=True))
        ]

    def row_by_pid(self, pid: int) -> dict[str, Any] | None:
        return next((r for r in self.rows.values() if r.get("pid") == pid), None)


PING_EVERY_S = 0.2
"""A pair of pings (forge and the bare echo server) this often: 300 pairs a minute, so a
one-minute run's p99 is its third-worst pair, not its single worst."""


async def reach_stack_high_water(run: Run, url: str) -> None:
    """Warm-up: the deepest wrong messages the supervisor's decoder follows, each refused.

    Decoding one recurses once per level of nesting, up to Python's recursion limit: the main
    stack's high-water mark is bounded (~0.34 MB measured) but reached only when a hostile
    client first draws a depth near the limit, a step inside the slope's window. Reached here,
    in the warm-up, a step after it would be growth."""
    async with connect(url, subprotocols=subprotocols()) as ws:
        await ws.recv()
        await ws.recv()
        for depth in range(hostile.NEAR_LIMIT - 100, hostile.NEAR_LIMIT + 1):
            nesting = "[" * depth + "]" * depth
            try:
                await ws.send(f'{{"{hostile.NESTING}":{nesting},"kind":"more"}}')
                async with asyncio.timeout(ASK_BOUND_S):
                    answer = json.loads(await ws.recv())
            except ConnectionClosed as closed:
                run.violate("hostile", f"a wrong message {depth} deep closed with {closed}")
                return
            if answer.get("kind") != "error":
                run.violate("hostile", f"a wrong message {depth} deep was answered {answer}")


async def pingers(run: Run, urls: dict[str, str], samples: dict[str, list[float]]) -> None:
    """Ping forge and the bare echo server at the same instant, every `PING_EVERY_S`: the two
    round trips of a pair meet the same moment of the machine's load, so the p99 rule compares
    the supervisor with the floor, not one moment's neighbours with another's."""
    sockets = {name: await dial(run, name, url) for name, url in urls.items()}

    async def once(name: str) -> float | None:
        ws = sockets[name]
        started = time.perf_counter()
        await ws.send('{"kind":"ping"}')
        try:
            async with asyncio.timeout(ASK_BOUND_S):
                while True:
                    answer = await ws.recv()
                    if isinstance(answer, str) and json.loads(answer).get("kind") == "pong":
                        return (time.perf_counter() - started) * 1000
        except TimeoutError:
            run.violate("ping_bound", f"{name}: no pong in {ASK_BOUND_S}s")
            return None

    try:
        next_at = time.monotonic()
        while not run.stopping:
            at = run.now()
            pair = await asyncio.gather(*(once(name) for name in sockets))
            for name, latency in zip(sockets, pair, strict=True):
                if latency is not None:
                    samples[name].append(latency)
            run.pings.append((at, *(latency or 0.0 for latency in pair)))
            next_at = max(next_at + PING_EVERY_S, time.monotonic())
            await asyncio.sleep(next_at - time.monotonic())
    finally:
        for ws in sockets.values():
            await ws.close()


async def dial(run: Run, name: str, url: str, **options: Any) -> ClientConnection:
    """A connection, dialled again (and counted) while its opening handshake fails: on a
    saturated machine the bench's own process can be too slow to send its request within the
    server's handshake bound, and a real client redials."""
    while True:
        try:
            return await connect(
                url, ping_interval=None, subprotocols=subprotocols(), open_timeout=60, **options
            )
        except InvalidHandshake as error:
            run.count("handshakes_failed")
            run.event(f"{name}: opening handshake failed ({error!r}), dialling again")
            await asyncio.sleep(1)


async def echo_server(port: int) -> None:
    """The floor: a bare websockets server answering `ping` with `pong`."""

    async def handle(ws: ServerConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for _ in ws:
                await ws.send('{"kind":"pong"}')

    async with serve(handle, "127.0.0.1", port, compression=None):
        await asyncio.Future()


# --- faults -------------------------------------------------------------------------------


def worker_processes(supervisor: psutil.Process) -> list[tuple[int, str]]:
    """(pid, kind) of the supervisor's worker children."""
    found = []
    for child in supervisor.children():
        with contextlib.suppress(psutil.Error):
            line = " ".join(child.cmdline())
            for kind in ("terminal", "browser", "walker"):
                if f"forge.workers.{kind}" in line:
                    found.append((child.pid, kind))
    return found


class HostileDraws:
    """The hostile client's frames. bench/hostile.py draws them in a fresh interpreter (so a seed
    replays them whatever this process has imported) from seeds of the run's own: the first
    while the run starts, before any latency is measured (a second of CPU a short run's pings
    would otherwise share), each later one when its fault comes."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.first: asyncio.Future[tuple[int, Any]] | None = asyncio.ensure_future(self.draw())

    async def draw(self) -> tuple[int, Any]:
        seed = self.rng.getrandbits(32)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-P", str(HOSTILE), str(seed),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            out, err = await process.communicate()
        finally:
            if process.returncode is None:  # cancelled: the run's end leaves no process behind
                process.kill()
                await process.wait()
        if process.returncode != 0:
            why = f"exited {process.returncode}: {err[-300:]!r}"
            raise RuntimeError(f"bench/hostile.py {seed} {why}")
        return seed, msgspec.json.decode(out, type=hostile.Frames)

    async def take(self) -> tuple[int, Any]:
        first, self.first = self.first, None
        return await (first if first is not None else self.draw())

    def cancel(self) -> None:
        if self.first is not None:
            self.first.cancel()


class Faults:
    def __init__(self, run: Run, rng: random.Random, supervisor: psutil.Process, port: int,
                 url: str, monitor: Monitor, config: Path, log: Path, good_config: str,
                 seat: dict[str, str], hostile_draws: HostileDraws) -> None:  # fmt: skip
        self.run, self.rng, self.supervisor, self.port, self.url = run, rng, supervisor, port, url
        self.hostile_draws = hostile_draws
        self.monitor, self.config, self.log, self.good_config, self.seat = (
            monitor,
            config,
            log,
            good_config,
            seat,
        )
        self.checks: list[asyncio.Task[None]] = []
        self.origins_toggle = False

    async def run_forever(self, every: tuple[float, float]) -> None:
        kinds: list[tuple[str, Callable[[], Awaitable[None]]]] = [
            ("kill9", self.kill9), ("kill9", self.kill9), ("hang", self.hang),
            ("pause", self.pause), ("reset", self.reset), ("half_open", self.half_open),
            ("hostile", self.hostile), ("config", self.config_edit), ("sighup", self.sighup),
            ("kill9_lab_runner", self.kill9_lab_runner),
        ]  # fmt: skip
        await asyncio.sleep(every[1])
        while not self.run.stopping:
            name, fault = self.rng.choice(kinds)
            try:
                await fault()
            except Exception as error:
                self.run.event(f"fault {name} could not run: {error!r}")
            await asyncio.sleep(self.rng.uniform(*every))

    def spawn(self, work: Awaitable[None]) -> None:
        self.checks.append(asyncio.ensure_future(work))

    def pick_worker(self) -> tuple[int, str, str] | None:
        workers = [
            (pid, kind, row["name"])
            for pid, kind in worker_processes(self.supervisor)
            if (row := self.monitor.row_by_pid(pid)) is not None and row.get("state") == "ready"
        ]
        return self.rng.choice(sorted(workers)) if workers else None

    async def kill9(self) -> None:
        picked = self.pick_worker()
        if picked is None:
            return
        pid, kind, name = picked
        before = {k: dict(v) for k, v in self.monitor.rows.items()}
        self.run.fault(f"kill9_{kind}", f"{name} pid {pid}")
        os.kill(pid, signal.SIGKILL)
        self.spawn(self.expect_recovery(name, pid, before))

    async def kill9_lab_runner(self) -> None:
        """kill -9 of an attempt runner of the background `forge evaluate`: the run aborts, the
        same command resumes it, and its verdicts still equal the first run's (lab_loop)."""
        runners = []
        for process in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                # The runner, not what it started (its deathwatch and commands inherit the name).
                if _carries_a_runner_name(process) and not _carries_a_runner_name(process.parent()):
                    runners.append(process)
        if not runners:
            return
        runner = self.rng.choice(sorted(runners, key=lambda p: p.pid))
        self.run.fault("kill9_lab_runner", f"attempt runner pid {runner.pid}")
        with contextlib.suppress(psutil.Error):
            runner.kill()

    async def hang(self) -> None:
        picked = self.pick_worker()
        if picked is None:
            return
        pid, kind, name = picked
        before = {k: dict(v) for k, v in self.monitor.rows.items()}
        seconds = self.rng.uniform(7, 10)
        self.run.fault(f"hang_{kind}", f"{name} pid {pid} SIGSTOP for {seconds:.1f}s")
        os.kill(pid, signal.SIGSTOP)
        self.spawn(self.expect_recovery(name, pid, before))
        await asyncio.sleep(seconds)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)

    async def pause(self) -> None:
        """A stop shorter than the watchdog's 5 heartbeats: the worker must simply carry on."""
        picked = self.pick_worker()
        if picked is None:
            return
        pid, kind, name = picked
        seconds = self.rng.uniform(0.5, 2.5)
        self.run.fault(f"pause_{kind}", f"{name} pid {pid} SIGSTOP for {seconds:.1f}s")
        os.kill(pid, signal.SIGSTOP)
        await asyncio.sleep(seconds)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
        await asyncio.sleep(8)
        row = self.monitor.rows.get(name)
        if row is not None and row.get("pid") != pid:
            self.run.violate("pause_survived", f"{name} was replaced after a {seconds:.1f}s stop")

    async def expect_recovery(self, name: str, pid: int, before: dict[str, Any]) -> None:
        deadline = time.monotonic() + RECOVERY_BOUND_S
        verdict = None
        while time.monotonic() < deadline and not self.run.stopping:
            verdict = checks.recovery(pid, self.monitor.rows.get(name))
            if verdict:
                break
            await asyncio.sleep(0.25)
        if self.run.stopping and verdict is None:
            return
        if verdict is None:
            row = self.monitor.rows.get(name)
            self.run.violate(
                "worker_recovery", f"{name} (pid {pid}) after {RECOVERY_BOUND_S}s: {row}"
            )
            return
        self.run.count(f"worker_{verdict}")
        self.run.event(f"{name}: {verdict} {self.monitor.rows.get(name)}")
        faulted = {name} | {n for n, r in self.monitor.rows.items() if n not in before}
        faulted |= (
            {n for n in before if n.startswith("terminal-")} if name.startswith("walker") else set()
        )
        await asyncio.sleep(2)
        spared = faulted | self.recently_faulted()
        for problem in checks.untouched(before, self.monitor.rows, spared):
            self.run.violate("others_untouched", f"after {name}'s fault: {problem}")

    def recently_faulted(self) -> set[str]:
        """Rows any fault touched during the last recovery bound (their own checks judge them)."""
        names = set()
        horizon = self.run.now() - RECOVERY_BOUND_S - 10
        for line in self.run.events:
            stamp, _, text = line.strip().partition("s ")
            with contextlib.suppress(ValueError):
                if float(stamp) >= horizon and text.startswith("FAULT "):
                    names.add(text.split(": ", 1)[1].split(" ")[0])
        return names

    async def reset(self) -> None:
        """A viewer whose TCP ends in RST (SO_LINGER 0) mid-stream: the server must tear it
        down and log it, and nobody else may notice."""
        sock = socket.create_connection(("127.0.0.1", self.port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        peer = f"127.0.0.1:{sock.getsockname()[1]}"
        ws = await connect(self.url, sock=sock, ping_interval=None, subprotocols=subprotocols())
        await ws.send(json.dumps({"kind": "terminal_view", "seat": self.seat}))
        await asyncio.sleep(self.rng.uniform(0.2, 2))
        self.run.fault("reset", peer)
        ws.transport.abort()
        self.spawn(self.expect_closed(peer, 20))

    async def half_open(self) -> None:
        """A client that views a terminal and then neither reads nor answers pings."""
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", self.port))
        peer = f"127.0.0.1:{sock.getsockname()[1]}"
        ws = await connect(self.url, sock=sock, ping_interval=None, subprotocols=subprotocols())
        await ws.send(json.dumps({"kind": "terminal_view", "seat": self.seat}))
        await asyncio.sleep(1)
        ws.transport.pause_reading()
        self.run.fault("half_open", peer)

        async def later() -> None:
            await self.expect_closed(peer, HALF_OPEN_BOUND_S)
            ws.transport.abort()

        self.spawn(later())

    async def expect_closed(self, peer: str, bound: float) -> None:
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline:
            if any(r.get("peer") == peer for r in self.records("socket_closed")):
                self.run.count("dead_peers_dropped")
                return
            await asyncio.sleep(0.5)
        if not self.run.stopping:
            self.run.violate("dead_peer", f"{peer} not closed by the server within {bound:.0f}s")

    def records(self, name: str) -> list[dict[str, Any]]:
        """The supervisor's `name` records in forge.log and its newest rotated copy (a check
        runs within seconds of its event, far less than the time to fill a whole log)."""
        found = []
        for path in (self.log.with_name(self.log.name + ".1"), self.log):
            with contextlib.suppress(OSError), path.open("rb") as log:
                for line in log:
                    if name.encode() in line:
                        with contextlib.suppress(ValueError):
                            record = json.loads(line)
                            if record.get("record") == name:
                                found.append(record)
        return found

    async def hostile(self) -> None:
        """A client sending the frames bench/hostile.py drew: each text frame answered with an
        error on a connection that stays, the binary ones dropped (a ping after them gets its
        pong), then one 17 MiB frame closed with 1009."""
        try:
            seed, (messages, junk) = await self.hostile_draws.take()
        except RuntimeError as error:
            self.run.violate("hostile", str(error))
            return
        self.run.fault(
            "hostile",
            f"bench/hostile.py {seed}: {len(messages)} wrong messages, {len(junk)} binary frames, "
            "one 17 MiB frame",
        )
        ws = await connect(self.url, ping_interval=None, max_size=None, subprotocols=subprotocols())
        try:
            await ws.recv()
            await ws.recv()
            for message in messages:
                await ws.send(message.text)
                async with asyncio.timeout(ASK_BOUND_S):
                    answer = json.loads(await ws.recv())
                if answer.get("kind") != "error":
                    what = f"{message.flaw} ({message.kind}) {message.text[:80]!r}"
                    self.run.violate("hostile", f"{what} answered {answer}")
            for frame in junk:
                await ws.send(frame)
            await ws.send('{"kind":"ping"}')
            async with asyncio.timeout(ASK_BOUND_S):
                answer = json.loads(await ws.recv())
            if answer != {"kind": "pong"}:
                self.run.violate("hostile", f"after binary junk, ping answered {answer}")
            with contextlib.suppress(ConnectionClosed):
                await ws.send(b"\x05\x00\x00" + bytes(17 * 2**20))
                async with asyncio.timeout(ASK_BOUND_S):
                    while True:
                        await ws.recv()
            if ws.close_code != 1009:
                self.run.violate("hostile", f"a 17 MiB frame closed with {ws.close_code}, not 1009")
            self.run.count("hostile_answered", len(messages))
        finally:
            with contextlib.suppress(Exception):
                await ws.close()

    async def config_edit(self) -> None:
        """A broken forge.toml (no push, `config_reload_failed`), then a good edit (a push)."""
        pushes = self.monitor.settings_pushes
        failures = len(self.records("config_reload_failed"))
        self.run.fault("config", "broken forge.toml, then a good edit")
        # Rewritten in place (truncate, then write), as some editors save: a poll may read it
        # empty, a valid config, which the watcher must not apply (seed 2126's hour found it;
        # the watcher now applies only text a second read agrees with).
        self.config.write_text(self.good_config + "\n[server\nport = \n")
        await asyncio.sleep(3)
        if self.monitor.settings_pushes != pushes:
            self.run.violate("config", "a broken forge.toml pushed settings")
        if len(self.records("config_reload_failed")) <= failures:
            self.run.violate("config", "a broken forge.toml logged no config_reload_failed")
        self.origins_toggle = not self.origins_toggle
        origins = '["http://chaos.example:1"]' if self.origins_toggle else "[]"
        text = self.good_config.replace("allowed_origins = []", f"allowed_origins = {origins}")
        write_atomic(self.config, text.encode())
        deadline = time.monotonic() + 15
        while self.monitor.settings_pushes == pushes and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.2)
        if self.monitor.settings_pushes == pushes:
            self.run.violate("config", "a good edit after a broken one pushed no settings in 15s")

    async def sighup(self) -> None:
        self.run.fault("sighup", f"supervisor pid {self.supervisor.pid}")
        self.supervisor.send_signal(signal.SIGHUP)
        await asyncio.sleep(2)
        if not self.supervisor.is_running():
            self.run.violate("sighup", "the supervisor died of SIGHUP")


# --- background load: the Lab and gh ------------------------------------------------------


async def stoppable(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run `forge evaluate` to its end; cancelled, stop it as Ctrl-C does and wait for it (the
    run's end must leave no evaluation running)."""
    process = await asyncio.create_subprocess_exec(
        *argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        _, stderr = await process.communicate()
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGINT)
        try:
            async with asyncio.timeout(60):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()
        raise
    assert process.returncode is not None
    return process.returncode, stderr.decode("utf-8", "replace")


def _carries_a_runner_name(process: psutil.Process | None) -> bool:
    """An attempt runner, or a process it started (children inherit its environment)."""
    return process is not None and process.environ().get("FORGE_WORKER_NAME", "").startswith(
        "lab-attempt-"
    )


async def lab_loop(run: Run, root: Path, env: dict[str, str]) -> None:
    """`forge evaluate --parallel 2` again and again; every report's verdicts equal the first's."""

    def make_kit() -> Kit:
        """The cohort's repositories, made by a dozen git processes: in a thread, for on a
        saturated machine they held this loop past the server's handshake bound, and every
        client that had just connected lost its handshake."""
        kit = Kit(root)
        tasks = {f"t{i}": kit.plan(f"t{i}") for i in range(2)}
        kit.cohort(
            a=kit.formula("a", knobs={"FAKE_SLEEP_S": "2"}),
            b=kit.formula("b", knobs={"FAKE_SLEEP_S": "2", "FAKE_ACTION": "none"}),
            tasks=tasks,
        )
        return kit

    kit = await asyncio.to_thread(make_kit)
    first = None
    round_ = 0
    while not run.stopping:
        round_ += 1
        out = root / f"out-{round_}"

        async def once(out: Path = out) -> tuple[int, str]:
            digest = await asyncio.to_thread(kit.digest, out=out)
            argv = kit.argv("--approve", digest, "--parallel", "2", out=out)
            return await stoppable(argv, kit.env(env))

        code, stderr = await once()
        while code == 1 and "attempt runner crashed" in stderr:
            run.event(f"lab: round {round_} lost a runner; resuming")
            run.count("lab_resumes")
            code, stderr = await once()
        if code not in (0, 2):
            run.violate("lab", f"round {round_} exited {code}: {stderr[-300:]}")
            continue
        report = json.loads((out / "report.json").read_text())
        verdicts = checks.verdicts(report)
        if first is None:
            first = verdicts
        elif verdicts != first:
            run.violate("lab", f"round {round_} verdicts {verdicts} differ from the first {first}")
        run.count("lab_runs")
        run.count("lab_attempts", len(verdicts))


DISK_FULL = ["sh", "-c", 'trap "" XFSZ; ulimit -S -f 1; exec "$@"', "sh"]
"""A write budget for one gh call: no file over 512 bytes, so a queue entry cannot be spooled."""


async def gh_loop(
    run: Run, root: Path, rng: random.Random, sent: list[str], failed: list[str]
) -> Any:
    """gh calls through the shim against the fake; outages switched on and off; during an
    outage, now and then a write with no room to spool (it must fail loudly, never land)."""

    def make_env() -> Any:
        """The health tests' fake GitHub and shim environment, imported and built in a thread
        (this loop serves every client of the run meanwhile)."""
        from tests.health import conftest as health

        env = health.build_env(root, "/usr/bin/dash")
        env.fake.seed("chaos target")
        return env

    env = await asyncio.to_thread(make_env)
    outage_until = 0.0
    n = 0
    while not run.stopping:
        await asyncio.sleep(rng.uniform(1, 4))
        now = time.monotonic()
        if outage_until and now > outage_until:
            env.fake.clear_faults()
            outage_until = 0.0
            run.event("gh: outage over")
        elif not outage_until and rng.random() < 0.1:
            env.fake.fail("*", rng.choice(["503", "net", "502"]), times=-1)
            outage_until = now + rng.uniform(10, 60)
            run.count("gh_outages")
            run.event("gh: outage begins")
        if outage_until and rng.random() < 0.1:
            n += 1
            body = f"chaos-{run.seed}-{n}"
            run.fault("disk_full", f"gh write {body} with no room to spool")
            argv = [*DISK_FULL, *env.shell.split(), str(env.shim), "issue", "comment", "1"]
            full = await asyncio.to_thread(
                subprocess.run,
                [*argv, "--body", body],
                capture_output=True, env=env.env, cwd=env.project, check=False, timeout=60,
            )  # fmt: skip
            if full.returncode == 0:
                sent.append(body)
            elif b"[forge-queue] NOT queued" not in full.stderr:
                run.violate("disk_full", f"rc {full.returncode} without a reason: {full.stderr!r}")
            else:
                failed.append(body)
        elif rng.random() < 0.4:
            n += 1
            body = f"chaos-{run.seed}-{n}"
            result = await asyncio.to_thread(env.gh, "issue", "comment", "1", "--body", body)
            if result.returncode == 0:
                sent.append(body)
            run.count("gh_writes")
        else:
            await asyncio.to_thread(env.gh, "issue", "list")
            run.count("gh_reads")
    return env


async def gh_settle(run: Run, env: Any, sent: list[str], failed: list[str]) -> None:
    """Outage off, one healthy call to trigger the replay, then every accepted write once."""
    env.fake.clear_faults()
    await asyncio.to_thread(env.gh, "issue", "list")
    breadcrumb = env.state_dir / "replay-pending"
    deadline = time.monotonic() + 120
    while breadcrumb.exists() and time.monotonic() < deadline:  # noqa: ASYNC110 (a file on disk)
        await asyncio.sleep(0.5)
    await asyncio.to_thread(env.forge, "queue", "replay", "--apply")
    comments = [c["body"] for c in env.fake.issues()["1"]["comments"]]
    problems = checks.gh_writes(sent, comments, failed)
    for problem in problems:
        run.violate("gh_queue", problem)
    run.figures["gh_writes_accepted"] = len(sent)
    run.figures["gh_writes_landed"] = len(comments)


# --- the run ------------------------------------------------------------------------------


def config_text(home: Path, projects: list[tuple[str, str | None]]) -> str:
    # Turns of the loop past 150 ms are logged with what held them (the summary's loop_stalls).
    lines = ["[server]", "allowed_origins = []", "", "[log]", "loop_stall_ms = 150", ""]
    for name, profile in projects:
        path = home / "projects" / name
        path.mkdir(parents=True, exist_ok=True)
        lines += ["[[projects]]", 'org = "chaos"', f'name = "{name}"', f'path = "{path}"',
                  'shell = "/bin/bash"']  # fmt: skip
        if profile:
            lines.append(f'browser_profile = "{profile}"')
        lines.append("")
    return "\n".join(lines)


def marked(marker: str) -> list[psutil.Process]:
    """Live processes carrying the run's marker in their environment (everything it started)."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        with contextlib.suppress(psutil.Error):
            if proc.pid == os.getpid() or proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if proc.environ().get("FORGE_CHAOS_RUN") == marker:
                found.append(proc)
    return found


RESIDENT_KINDS = ("heap", "anon", "file", "stack")
"""Where resident memory lives, by mapping: glibc's main heap (`[heap]`), anonymous mappings
(Python's object arenas, glibc's other arena, mmapped blocks, thread stacks), files (code and
libraries, paged in as they are first run), the main thread's stack."""
RESIDENT_EVERY = 12
"""One breakdown of resident memory by mapping every this many samples (a minute): reading
`/proc/<pid>/smaps` costs more than the other figures."""


def resident_by_kind(process: psutil.Process) -> dict[str, float]:
    """The process's resident memory in MB per `RESIDENT_KINDS`, from its mappings."""
    kinds = dict.fromkeys(RESIDENT_KINDS, 0.0)
    for mapping in process.memory_maps(grouped=False):
        path = mapping.path
        kind = "file" if path.startswith("/") else path.strip("[]").split(":")[0]
        if kind in kinds:
            kinds[kind] += mapping.rss / 1e6
    return kinds


HEAP_MAP_EVERY = 60
"""A map of the supervisor's heap (`bench/heapmap.py`) every this many samples (5 minutes)."""


async def map_heap(run: Run, pid: int, out: Path, number: int) -> None:
    """The supervisor's heap, walked from outside, to `out/heap-NN.json`; its live and resident
    megabytes into the series. Skipped where the process's memory cannot be read (not root
    and ptrace forbids it)."""
    try:
        found = await asyncio.to_thread(heapmap.report, pid)
    except (OSError, SystemExit) as error:
        run.event(f"heap map {number} not taken: {error}")
        return
    (out / f"heap-{number:02d}.json").write_text(json.dumps(found, indent=1))
    run.figures.setdefault("heap_maps", []).append(
        {
            "at_s": round(run.now(), 1),
            "live_mb": found["live"]["mb"],
            "resident_mb": found["resident_mb"],
            "span_mb": found["span_mb"],
        }
    )


async def sample(
    run: Run, process: psutil.Process, series: dict[str, list[tuple[float, float]]], out: Path
) -> None:
    for turn in itertools.count():
        if run.stopping:
            return
        if turn % HEAP_MAP_EVERY == 0:
            await map_heap(run, process.pid, out, turn // HEAP_MAP_EVERY)
        with contextlib.suppress(psutil.Error):
            series["rss_mb"].append((run.now(), process.memory_info().rss / 1e6))
            series["fds"].append((run.now(), float(process.num_fds())))
            series["threads"].append((run.now(), float(process.num_threads())))
            series["children"].append((run.now(), float(len(process.children(recursive=True)))))
            if turn % RESIDENT_EVERY == 0:
                for kind, mb in resident_by_kind(process).items():
                    series.setdefault(f"rss_{kind}_mb", []).append((run.now(), mb))
        await asyncio.sleep(5)


CENSUS_EVERY_S = 600.0
"""How often the supervisor is asked for a census of its live objects (after warm-up)."""
LISTEN_S = 300.0
"""How long the supervisor may take to listen before the run gives up (a guard, not a claim)."""
LISTEN_TRACED_S = 1200.0
"""...under tracemalloc, which made it take 5.5 minutes to listen at load 22."""


async def chaos(
    minutes: float, seed: int, out: Path, small: bool, trace_memory: bool, latency_rule: bool
) -> int:
    rng = random.Random(seed)
    run = Run(seed)
    out.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 (once, before any load)
    run.log_file = (out / "events.log").open("w")
    hostile_draws = HostileDraws(random.Random(f"{seed} hostile"))
    marker = uuid.uuid4().hex
    home = Path(tempfile.mkdtemp(prefix="forge-chaos-"))
    for sub in ("config", "state", "runtime", "tmp"):
        (home / sub).mkdir()
    os.environ.update(
        XDG_STATE_HOME=str(home / "state"), XDG_CONFIG_HOME=str(home / "config"),
        XDG_RUNTIME_DIR=str(home / "runtime"), FORGE_CHAOS_RUN=marker, HOME=str(home),
    )  # fmt: skip
    os.chmod(home / "runtime", 0o700)
    projects = [("alpha", None), ("beta", None), ("web1", "p1"), ("web2", "p2")]
    good = config_text(home, projects)
    config = home / "forge.toml"
    config.write_text(good)
    port, echo_port = free_port(), free_port()
    load = os.getloadavg()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"# chaos: {minutes:g} min, seed {seed}, {platform.node()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, {when}, "
          f"load average at start {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}",
          flush=True)  # fmt: skip
    forge = (
        [sys.executable, "-P", str(ROOT / "bench" / "traced_supervise.py"), str(out)]
        if trace_memory
        else [sys.executable, "-m", "forge.cli"]
    )
    supervisor_proc = await asyncio.create_subprocess_exec(
        *forge, "supervise", "--config", str(config),
        "--port", str(port), "--log-level", "info",
        stdout=asyncio.subprocess.DEVNULL, stderr=(out / "supervisor.stderr").open("wb"),
    )  # fmt: skip
    echo = await asyncio.create_subprocess_exec(
        sys.executable, "-P", __file__, "--echo-server", str(echo_port)
    )
    url = f"ws://127.0.0.1:{port}/socket"
    log = home / "state" / "forge" / "forge.log"
    started = time.monotonic()
    listen_s = LISTEN_TRACED_S if trace_memory else LISTEN_S
    while not (log.exists() and b"socket_listening" in log.read_bytes()):
        if supervisor_proc.returncode is not None or time.monotonic() - started > listen_s:
            why = (
                f"exited {supervisor_proc.returncode}"
                if supervisor_proc.returncode is not None
                else f"not within {listen_s:g} s"
            )
            for started_here in (supervisor_proc, echo):  # nothing this run started outlives it
                with contextlib.suppress(ProcessLookupError):
                    started_here.terminate()
                await started_here.wait()
            raise SystemExit(f"forge supervise did not listen ({why}); see {out}/supervisor.stderr")
        await asyncio.sleep(0.1)
    supervisor = psutil.Process(supervisor_proc.pid)

    http, page = serve_in_thread(page_of(PAGE.encode()))

    plans = [
        TerminalPlan("flood", {"org": "chaos", "project": "alpha", "label": "flood"}, "flood",
                     rng.randint(1, 2), phone=True),
        TerminalPlan("shell", {"org": "chaos", "project": "alpha", "label": "shell"}, "shell",
                     rng.randint(0, 2), phone=False),
        TerminalPlan("build", {"org": "chaos", "project": "beta", "label": "build"}, "build",
                     rng.randint(1, 2), phone=True),
        TerminalPlan("screen", {"org": "chaos", "project": "beta", "label": "screen"}, "screen",
                     rng.randint(0, 2), phone=False),
    ]  # fmt: skip
    if small:
        plans = plans[:2] + plans[2:3]
    rate = "1000" if small else "3000"
    global FLOOD
    FLOOD = FLOOD.replace("RATE", rate)
    monitor = Monitor(run, url, [p.seat for p in plans])
    await monitor.start()
    await reach_stack_high_water(run, url)
    samples: dict[str, list[float]] = {"forge": [], "bare": []}
    series: dict[str, list[tuple[float, float]]] = {
        "rss_mb": [],
        "fds": [],
        "threads": [],
        "children": [],
    }
    actors = [TerminalActor(run, url, plan, random.Random(rng.random())) for plan in plans]
    browsers = [
        BrowserActor(run, url, f"browser-{name}", {"org": "chaos", "project": name, "label": "web"},
                     page, random.Random(rng.random()))
        for name in (["web1"] if small else ["web1", "web2"])
    ]  # fmt: skip
    gh_sent: list[str] = []
    gh_failed: list[str] = []
    # Python takes a short write of its bytecode cache as a whole one: compiled now, a gh call
    # with no room to spool only reads it.
    compileall.compile_dir(ROOT / "forge", quiet=1)
    lab_env = {"FORGE_CHAOS_RUN": marker}
    faults = Faults(run, random.Random(rng.random()), supervisor, port, url, monitor, config, log,
                    good, plans[0].seat, hostile_draws)  # fmt: skip
    every = (10.0, 25.0) if small else (20.0, 60.0)
    tasks = [
        asyncio.create_task(
            pingers(run, {"forge": url, "bare": f"ws://127.0.0.1:{echo_port}/"}, samples)
        ),
        asyncio.create_task(sample(run, supervisor, series, out)),
        asyncio.create_task(monitor.hold_seats()),
        *(asyncio.create_task(actor.run_forever()) for actor in actors),
        *(asyncio.create_task(actor.run_forever()) for actor in browsers),
        asyncio.create_task(lab_loop(run, home / "lab", lab_env)),
        asyncio.create_task(
            gh_loop(run, home / "gh", random.Random(rng.random()), gh_sent, gh_failed)
        ),
        asyncio.create_task(faults.run_forever(every)),
    ]
    names = ["ping", "sample", "walker", *(a.plan.name for a in actors),
             *(b.name for b in browsers), "lab", "gh", "faults"]  # fmt: skip
    deadline = time.monotonic() + minutes * 60
    ended = asyncio.Event()
    for stop in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(stop, ended.set)
    next_report = time.monotonic() + 60
    warm = min(300.0, minutes * 60 / 4)
    snapshots = [warm, minutes * 60 - 5] if trace_memory else []
    censuses = [warm + CENSUS_EVERY_S * n for n in range(int(minutes * 60 / CENSUS_EVERY_S) + 1)]
    censuses = [at for at in censuses if at < minutes * 60 - 5] + [minutes * 60 - 5]
    while time.monotonic() < deadline and not ended.is_set():
        await asyncio.sleep(1)
        for name, task in zip(names, tasks, strict=True):
            if task.done() and not task.cancelled() and task.exception() and not run.stopping:
                error = task.exception()
                run.violate("actor_died", f"{name}: {error!r}")
                tasks[tasks.index(task)] = asyncio.create_task(asyncio.sleep(1e9))
        if supervisor_proc.returncode is not None:
            run.violate("supervisor_died", f"exit {supervisor_proc.returncode}")
            break
        if snapshots and run.now() >= snapshots[0]:
            snapshots.pop(0)
            supervisor_proc.send_signal(signal.SIGUSR2)
        if censuses and run.now() >= censuses[0]:
            censuses.pop(0)
            supervisor_proc.send_signal(signal.SIGUSR1)  # forge's census of live objects
        if time.monotonic() > next_report:
            next_report += 60
            rss = series["rss_mb"][-1][1] if series["rss_mb"] else 0
            print(f"{run.now() / 60:5.1f} min: {sum(run.faults.values())} faults, "
                  f"{len(run.violations)} violations, rss {rss:.0f} MB, "
                  f"load {os.getloadavg()[0]:.1f}, {run.counters}", flush=True)  # fmt: skip
    run.stopping = True
    gh_index = names.index("gh")
    gh_task = tasks[gh_index]
    for task in tasks:
        if task is not gh_task:
            task.cancel()
    for task in faults.checks:
        task.cancel()
    hostile_draws.cancel()
    await asyncio.gather(*tasks, *faults.checks, return_exceptions=True)
    gh_env = (
        gh_task.result()
        if gh_task.done() and not gh_task.cancelled() and not gh_task.exception()
        else None
    )
    if gh_env is not None:
        await gh_settle(run, gh_env, gh_sent, gh_failed)
    for actor in actors:
        for viewer in [actor.controller, *actor.watchers]:
            await viewer.conn.close()
    for browser in browsers:
        for bviewer in browser.viewers:
            await bviewer.conn.close()
    for seat in monitor.unwalked():
        run.violate("walker", f"seat {seat} was held the whole run and never walked")
    run.figures["walks_per_seat"] = dict(monitor.walked)
    await monitor.conn.close()

    supervisor_proc.send_signal(signal.SIGTERM)
    try:
        async with asyncio.timeout(60):
            code = await supervisor_proc.wait()
    except TimeoutError:
        run.violate("stop", "the supervisor did not exit within 60 s of SIGTERM")
        supervisor_proc.kill()
        code = await supervisor_proc.wait()
    echo.terminate()
    await echo.wait()
    http.shutdown()
    await asyncio.sleep(3)
    left = marked(marker)
    for proc in left:
        with contextlib.suppress(psutil.Error):
            run.violate("orphans", f"left behind: pid {proc.pid} {' '.join(proc.cmdline())[:120]}")
            proc.kill()

    after = {k: [(t, v) for t, v in s if t >= warm] for k, s in series.items()}
    forge_p99 = checks.percentile(samples["forge"], 99)
    bare_p99 = checks.percentile(samples["bare"], 99)
    ping_problem = checks.ping_verdict(forge_p99, bare_p99)
    if ping_problem and latency_rule:
        run.violate("ping_p99", ping_problem)
    elif ping_problem:
        run.event(f"not judged (--no-latency-rule): {ping_problem}")
    rss_slope = checks.slope_per_hour(after["rss_mb"])
    fds_slope = checks.slope_per_hour(after["fds"])
    typed = run.figures.pop("typed_ms", [])
    summary = {
        "seed": seed,
        "minutes": minutes,
        "supervisor_exit": code,
        "faults": run.faults,
        "faults_total": sum(run.faults.values()),
        "violations": len(run.violations),
        "counters": run.counters,
        "ping_ms": {
            "forge_p50": checks.percentile(samples["forge"], 50),
            "forge_p99": forge_p99,
            "bare_p50": checks.percentile(samples["bare"], 50),
            "bare_p99": bare_p99,
            "count": len(samples["forge"]),
        },
        "typed_echo_ms": {"p50": checks.percentile(typed, 50), "p99": checks.percentile(typed, 99)},
        "rss_mb": {
            "first": series["rss_mb"][0][1] if series["rss_mb"] else None,
            "last": series["rss_mb"][-1][1] if series["rss_mb"] else None,
            "max": max((v for _, v in series["rss_mb"]), default=None),
            "slope_after_warmup_mb_per_hour": rss_slope,
            "slope_95_interval": checks.slope_interval(after["rss_mb"], seed=seed),
            "by_mapping": {
                kind: {
                    "last": points[-1][1],
                    "slope_after_warmup_mb_per_hour": checks.slope_per_hour(points),
                }
                for kind in RESIDENT_KINDS
                if (points := after.get(f"rss_{kind}_mb"))
            },
        },
        "fds": {
            "first": series["fds"][0][1] if series["fds"] else None,
            "last": series["fds"][-1][1] if series["fds"] else None,
            "slope_after_warmup_per_hour": fds_slope,
        },
        "threads_last": series["threads"][-1][1] if series["threads"] else None,
        "warmup_s": warm,
        "processes_left": len(left),
        "bytes_lost": run.counters.get("bytes_lost", 0)
        + sum(1 for _, rule, _ in run.violations if rule in ("terminal_seq", "terminal_bytes")),
        "load_average_end": os.getloadavg(),
        **run.figures,
    }
    summary["loop_stalls"] = loop_stalls(log)
    summary["heap"] = heap_slopes(log, warm)
    summary["census"] = census_growth(log)
    summary["worst_pings"] = [
        {"at_s": round(at, 1), "forge_ms": round(forge, 1), "bare_ms": round(bare, 1)}
        for at, forge, bare in sorted(run.pings, key=lambda ping: -ping[1])[:8]
    ]
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    (out / "series.json").write_text(json.dumps(series))
    if run.violations:  # the supervisor's own account of a failed run, for its replay
        for kept in log.parent.glob(log.name + "*"):
            shutil.copy2(kept, out / kept.name)
    shutil.rmtree(home, ignore_errors=True)  # its log was read above; what is kept is in `out`
    print(json.dumps(summary, indent=1, default=str))
    if trace_memory:
        print(memory_growth(out))
    if run.violations:
        print(f"\n{len(run.violations)} invariant violations (seed {seed}; replay: --seed {seed}):")
        for at, rule, detail in run.violations[:50]:
            print(f"  {at:8.1f}s {rule}: {detail}")
        print("\nevent log tail:")
        for line in list(run.events)[-40:]:
            print("  " + line)
        return 1
    print(f"\nno invariant violated (seed {seed})")
    return 0


def census_growth(log: Path, top: int = 15) -> dict[str, Any]:
    """What the supervisor's censuses (SIGUSR1, one after warm-up, then every ten minutes) say
    grew: per type, the rises summed over consecutive censuses (each census names the 30 types
    that grew most since the one before), largest first; a type that grows without bound rises
    in every one."""
    records = []
    for path in sorted(log.parent.glob(log.name + "*")):
        with contextlib.suppress(OSError), path.open("rb") as lines:
            for line in lines:
                if b'"record": "census"' in line:
                    with contextlib.suppress(ValueError):
                        records.append(json.loads(line))
    records.sort(key=lambda record: record["ts"])
    rises: dict[str, list[int]] = {}
    for record in records[1:]:
        for kind, before, after in record["grown"]:
            rises.setdefault(kind, []).append(after - before)
    ranked = sorted(rises.items(), key=lambda item: -sum(item[1]))[:top]
    return {
        "censuses": len(records),
        "objects": [record["objects"] for record in records],
        "largest_first": records[0].get("largest", []) if records else [],
        "largest_last": records[-1].get("largest", []) if records else [],
        "grew": [
            {"type": kind, "rise": sum(steps), "in_censuses": len(steps)} for kind, steps in ranked
        ],
    }


def heap_slopes(log: Path, warm: float) -> dict[str, Any]:
    """What the supervisor's heap held over the run (its `heap` records, one a minute), as slopes
    after warm-up: MB/hour of bytes in use and of free bytes kept, Python's blocks/hour, and the
    seats' windows (encoded bytes; each fills to its bound of 1024 frames or 8 MiB), and the
    longest `malloc_trim` of the run. A resident size that grows with `in_use` is objects living
    on; with `free`, fragmentation."""
    records = []
    for path in sorted(log.parent.glob(log.name + "*")):
        with contextlib.suppress(OSError), path.open("rb") as lines:
            for line in lines:
                if b'"record": "heap"' in line or b'"record":"heap"' in line:
                    with contextlib.suppress(ValueError):
                        records.append(json.loads(line))
    if not records:
        return {"records": 0}
    records.sort(key=lambda record: record["ts"])
    first = datetime.fromisoformat(records[0]["ts"]).timestamp() - 60  # the first is at a minute
    at = [(datetime.fromisoformat(r["ts"]).timestamp() - first, r) for r in records]
    kept = [(t, r) for t, r in at if t >= warm]

    def slope(key: str, scale: float) -> float:
        return round(checks.slope_per_hour([(t, r[key] / scale) for t, r in kept]), 2)

    last = records[-1]
    return {
        "records": len(records),
        "last_mb": {key: round(last[key] / 1e6, 1) for key in ("in_use", "free", "mmapped")},
        "in_use_mb_per_hour": slope("in_use", 1e6),
        "free_mb_per_hour": slope("free", 1e6),
        "mmapped_mb_per_hour": slope("mmapped", 1e6),
        "python_blocks_per_hour": slope("python_blocks", 1),
        **(
            {
                "window_frames_last": last["window_frames"],
                "window_mb_per_hour": slope("window_bytes", 1e6),
            }
            if "window_bytes" in last
            else {}
        ),
        **(
            {"longest_trim_ms": max(r["longest_trim_ms"] for _, r in at)}
            if "longest_trim_ms" in last
            else {}
        ),
    }


def loop_stalls(log: Path, top: int = 5) -> dict[str, Any]:
    """The supervisor's own account of its event loop standing still (forge's loop watch), over
    every copy of its log: how many stalls, how long the longest stood, how much of the time
    stood the loop's thread spent computing (near 1: forge's code; near 0: not scheduled or in a
    blocking call), and what held the longest."""
    stalled, resumed = [], []
    for path in sorted(log.parent.glob(log.name + "*")):
        with contextlib.suppress(OSError), path.open("rb") as lines:
            for line in lines:
                if b'"loop_' not in line:
                    continue
                with contextlib.suppress(ValueError):
                    record = json.loads(line)
                    if record.get("record") == "loop_stalled":
                        stalled.append(record)
                    elif record.get("record") == "loop_resumed":
                        resumed.append(record)
    stalled.sort(key=lambda record: -record["stood_s"])
    stood = sum(r["stood_s"] for r in resumed)
    longest = max(resumed, key=lambda r: r["stood_s"], default=None)
    return {
        "count": len(resumed),
        "longest_s": longest["stood_s"] if longest else None,
        "longest_cpu_s": longest.get("cpu_s") if longest else None,
        "cpu_share": round(sum(r.get("cpu_s", 0.0) for r in resumed) / stood, 3) if stood else None,
        "held_by": [
            {"ts": r["ts"], "stood_s": r["stood_s"], "frames": r["stack"].splitlines()[-4:]}
            for r in stalled[:top]
        ],
    }


def memory_growth(out: Path, top: int = 15) -> str:
    """The allocation sites whose held memory grew most between the two snapshots, by traceback."""
    taken = sorted(out.glob("snapshot-*.bin"))
    if len(taken) < 2:
        return f"memory: {len(taken)} snapshot(s) in {out}, two are needed to compare"
    before, after = (tracemalloc.Snapshot.load(str(path)) for path in taken[:2])
    lines = [f"memory: what the supervisor held at the end beyond after warm-up (top {top})"]
    layers = [json.loads(path.with_suffix(".json").read_text()) for path in taken[:2]]
    lines.extend(
        f"  {name}: {layers[0][name] / 1e6:.1f} -> {layers[1][name] / 1e6:.1f} MB"
        for name in layers[0]
    )
    for stat in after.compare_to(before, "traceback")[:top]:
        lines.append(f"  {stat.size_diff / 1e6:+8.3f} MB {stat.count_diff:+7d} blocks")
        lines.extend(f"      {line}" for line in stat.traceback.format(limit=6))
    text = "\n".join(lines)
    (out / "memory.txt").write_text(text + "\n")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--out", type=Path, default=Path("chaos-out"))
    parser.add_argument("--small", action="store_true", help="fewer actors (the test's variant)")
    parser.add_argument(
        "--no-latency-rule", dest="latency_rule", action="store_false",
        help="report the ping p99 without judging it (the test's variant: a test holds no "
        "wall-clock threshold, and a minute's p99 on a shared machine is its neighbours' too)",
    )  # fmt: skip
    parser.add_argument(
        "--trace-memory", action="store_true",
        help="run the supervisor under tracemalloc and print what grew after warm-up",
    )  # fmt: skip
    parser.add_argument("--echo-server", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo_server is not None:
        asyncio.run(echo_server(args.echo_server))
        return
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    run = chaos(
        args.minutes, seed, args.out.resolve(), args.small, args.trace_memory, args.latency_rule
    )
    sys.exit(asyncio.run(run))


if __name__ == "__main__":
    main()
