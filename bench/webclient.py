"""Web client benchmark: forge's page beside a floor page, in one Chromium, in one run.

    (cd web && npm ci)                      # once: the floor page is built from web/'s lockfile
    .venv/bin/python -P bench/webclient.py [--keys 100] [--mb 20] [--seconds 10]
                                           [--floor-loop asyncio|uvloop]

The floor page (web/bench/floor.ts, built here into a temporary folder) is the same xterm.js set
up the same way (fit, WebGL on a desktop, the same options and size), fed by a bare WebSocket
echo of a PTY that this process serves (websockets, ptyprocess, no framing, no protocol): what
any page showing a shell over a socket must at least cost. Forge's page is the real one, served
by a real `forge supervise` (its own process, with its terminal host and browser workers).
Both run the same shell (`bash --noprofile --norc`). Measured in the page, for both alike
(`window.forgeTerminal.term` is patched: a write whose bytes hold the awaited glyph marks the
next xterm.js `onRender` as the paint that shows it):
- keystroke -> glyph painted, p50/p99: from `keydown` (the event's own timestamp) to that render,
  ten keys on one page, then ten on the other (the load moves; both see the same), and the part
  of it until the echo's bytes reached `term.write` (the socket and the server behind it);
- a 20 MB flood (`yes <73 x> | head -c N`, then `DONE`): time from Enter to the render of the last
  line, renderer and GPU process CPU (Chromium's SystemInfo), the page main thread's busy time
  (CDP Performance TaskDuration), and the latency of keys typed every 200 ms during it (the
  kernel echoes them into the stream; a key whose echo never shows is counted lost). Forge's
  page acks what xterm.js has parsed (`terminal_ack`) and its host stops reading the PTY while
  512 KiB it sent are unparsed; the floor page, like any bare echo page, has no flow control
  (its server stops reading only when its socket's buffers are full);
- forge's page viewing a browser tab animated at 30 fps with "low latency" on (JPEG motion):
  frames received and drawn per second, the share drawn, and draw latency (frame received in
  the page -> drawn on the canvas).
Ratios are forge / floor. The floor server runs in this process on the standard asyncio loop,
as a bare websockets server does, unless `--floor-loop uvloop` puts it on forge's own loop.
Keystrokes are also timed on a third page, the relay floor: the floor page again, served by a
second floor server whose PTY lives in another process (on uvloop, read by a loop reader)
behind a ZeroMQ PAIR socket over ipc, so each byte crosses the process boundary and the two
ZeroMQ hops forge's architecture has, and nothing else of forge (no supervisor, no framing, no
screen model): what isolating the PTY in its own process must at least cost. forge / relay is
printed beside forge / floor.
The load average is printed before and after: run it on a quiet
machine, or say how loaded it was.
"""

from __future__ import annotations

import sys

# bench/ holds socket.py: keep this folder off sys.path so `import socket` is the stdlib's.
if sys.path[0] == __file__.rpartition("/")[0]:
    sys.path.pop(0)

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import zmq
import zmq.asyncio
from playwright.async_api import Browser, CDPSession, Page, ViewportSize, async_playwright
from ptyprocess import PtyProcess
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from forge import eventloop
from forge.testing.agent_cli import cli_env, unsteered
from forge.testing.model_replies import Event
from forge.testing.model_script import parse_script
from forge.testing.model_server import ModelServer, RecordedRequest
from forge.testing.person import SupervisorProcess, free_port

ROOT = Path(__file__).resolve().parents[1]
WEB = ROOT / "web"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
SHELL = ["/bin/bash", "--noprofile", "--norc"]
SEAT = "bench/web/main"
LINE = "x" * 73
FLOOD_KEY = "Q"
"""Typed during the flood: neither the flood (x) nor the DONE line holds one."""
END_GLYPH = "N"
"""The flood's last line is DONE: its N is the first one the shell prints after Enter."""

FLOOR_HTML = b"""<!doctype html><html><head><meta charset=utf-8>
<link rel=stylesheet href=floor.css>
<style>html,body{margin:0;height:100%;background:#11151c}</style>
</head><body><script type=module src=floor.js></script></body></html>"""
ANIMATED = b"""<!doctype html><html><head><meta name=viewport content="width=device-width">
<style>html,body{margin:0;height:100%;overflow:hidden}canvas{display:block}</style></head><body>
<canvas id=c></canvas><script>
const c = document.getElementById('c'), x = c.getContext('2d'); let hue = 0;
setInterval(() => {  // 30 fps: a new picture every 33 ms, whatever the display's rate
  c.width = innerWidth; c.height = innerHeight; hue = (hue + 7) % 360;
  x.fillStyle = `hsl(${hue},70%,50%)`; x.fillRect(0, 0, c.width, c.height);
  for (let i = 0; i < 60; i++) { x.fillStyle = `hsl(${(hue + i * 13) % 360},80%,60%)`;
    x.fillRect((i * 37 + hue * 3) % c.width, (i * 53) % c.height, 60, 60); }
}, 33);
</script></body></html>"""

MEASURE_JS = """() => {
    // Each awaited glyph: keydown time, then the write holding it, then the render after it.
    const term = window.forgeTerminal.term;
    const bench = window.bench = {waiting: [], samples: {}, expect: null, tag: "key"};
    const has = (data, code) => typeof data === "string"
        ? data.includes(String.fromCharCode(code)) : data.includes(code);
    document.addEventListener("keydown", (event) => {
        const plain = event.key.length === 1 && !event.ctrlKey && !event.altKey && !event.metaKey;
        const code = bench.expect ?? (plain ? event.key.charCodeAt(0) : null);
        if (code === null) return;
        bench.waiting.push({code, at: event.timeStamp, parsed: false, tag: bench.tag});
        bench.expect = null;
    }, true);
    const write = term.write.bind(term);
    term.write = (data, callback) => {
        const hits = bench.waiting.filter((w) => !w.parsed && has(data, w.code));
        const now = performance.now();
        for (const w of hits) w.wrote ??= now;
        write(data, () => {
            for (const w of hits) w.parsed = true;
            if (callback) callback();
        });
    };
    term.onRender(() => {
        const now = performance.now();
        for (const w of bench.waiting.filter((w) => w.parsed)) {
            (bench.samples[w.tag] ??= []).push(now - w.at);
            (bench.samples[w.tag + "_wire"] ??= []).push(w.wrote - w.at);
        }
        bench.waiting = bench.waiting.filter((w) => !w.parsed);
    });
}"""

FRAMES_JS = """() => {
    // Frames in forge's page: when each arrived, when it was drawn, and its format.
    const hook = window.forgeBrowser, surface = hook.surface;
    const arrived = new Map();
    const stats = window.benchFrames = {draws: [], formats: {}, received: 0, drawn: 0};
    const binary = surface.binary.bind(surface);
    surface.binary = (frame) => {
        if (frame.kind === "browser") {
            arrived.set(frame.seq, performance.now());
            stats.formats[frame.format] = (stats.formats[frame.format] ?? 0) + 1;
        }
        binary(frame);
    };
    const draw = surface.draw.bind(surface);
    surface.draw = (bitmap, frame) => {
        draw(bitmap, frame);
        const at = arrived.get(frame.seq);
        if (at === undefined) return;
        stats.draws.push(performance.now() - at);
        arrived.delete(frame.seq);
    };
    stats.start = [hook.received, hook.drawn];
}"""


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def progress(what: str) -> None:
    print(f"... {what}", file=sys.stderr, flush=True)


# --- the floor: a bare WebSocket echo of a PTY, and the files its page needs ------------------


def build_floor(out: Path) -> None:
    """web/bench/floor.ts with web/'s own esbuild and xterm.js (the lockfile's versions)."""
    esbuild = WEB / "node_modules" / ".bin" / "esbuild"
    if not esbuild.exists():
        raise SystemExit("run `npm ci` in web/ first: the floor page is built with its esbuild")
    subprocess.run(
        [str(esbuild), str(WEB / "bench" / "floor.ts"), "--bundle", "--minify", "--format=esm",
         f"--outdir={out}", "--log-level=warning"],
        check=True,
    )  # fmt: skip
    (out / "floor.html").write_bytes(FLOOR_HTML)


class Floor:
    """The floor's server: `/pty` is a shell's PTY as WebSocket binary messages both ways;
    other paths are the floor page's files and the animated page the browser tab shows."""

    def __init__(self, files: Path, home: Path, *, relay: bool = False) -> None:
        self.files = files
        self.home = home
        self.relay = relay
        """The PTY in a host process behind ZeroMQ (`relayed`), not in this one."""
        self.port = free_port()
        self._hosts = itertools.count(1)

    def respond(self, connection: ServerConnection, request: Request) -> Response | None:
        path = urlparse(request.path).path
        if path == "/pty":
            return None
        if path == "/animated.html":
            return self.file(ANIMATED, "text/html")
        target = self.files / path.lstrip("/")
        if path.count("/") != 1 or not target.is_file():
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        kinds = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
        return self.file(target.read_bytes(), kinds.get(target.suffix, "text/plain"))

    @staticmethod
    def file(body: bytes, kind: str) -> Response:
        headers = Headers([("Content-Type", kind), ("Content-Length", str(len(body)))])
        return Response(200, "OK", headers, body)

    async def session(self, ws: ServerConnection) -> None:
        query = parse_qs(urlparse(ws.request.path if ws.request else "").query)
        cols, rows = int(query["cols"][0]), int(query["rows"][0])
        if self.relay:
            await self.relayed(ws, cols, rows)
            return
        shell = spawn_shell(self.home, cols, rows)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        reading = True

        def readable() -> None:
            nonlocal reading
            try:
                data = os.read(shell.fd, 65536)
            except OSError:
                data = b""
            queue.put_nowait(data)
            if not data or queue.qsize() >= 8:  # the socket is behind: let the PTY block
                loop.remove_reader(shell.fd)
                reading = False

        async def pump() -> None:
            nonlocal reading
            while data := await queue.get():
                await ws.send(data)
                if not reading and queue.qsize() < 2:
                    reading = True
                    loop.add_reader(shell.fd, readable)

        loop.add_reader(shell.fd, readable)
        sender = asyncio.create_task(pump())
        try:
            async for message in ws:
                os.write(shell.fd, message if isinstance(message, bytes) else message.encode())
        finally:
            if reading:
                loop.remove_reader(shell.fd)
            sender.cancel()
            shell.terminate(force=True)

    async def relayed(self, ws: ServerConnection, cols: int, rows: int) -> None:
        """The socket's bytes to and from a PTY host process (`pty_host`) over ZeroMQ. No flow
        control: the relay page is only typed on, never flooded."""
        context = zmq.asyncio.Context()
        socket = context.socket(zmq.PAIR)
        endpoint = f"ipc://{self.home}/relay-{next(self._hosts)}"
        socket.bind(endpoint)
        host = await asyncio.create_subprocess_exec(
            sys.executable, "-P", __file__, "--pty-host", endpoint, str(cols), str(rows),
            str(self.home),
        )  # fmt: skip

        async def down() -> None:
            while True:
                await ws.send(await socket.recv())

        pump = asyncio.create_task(down())
        try:
            async for message in ws:
                await socket.send(message if isinstance(message, bytes) else message.encode())
        finally:
            pump.cancel()
            host.terminate()
            await host.wait()
            socket.close(linger=0)
            context.term()

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        async with serve(
            self.session, "127.0.0.1", self.port, process_request=self.respond,
            compression=None, max_size=None,
        ):  # fmt: skip
            yield f"http://127.0.0.1:{self.port}"


def spawn_shell(home: Path, cols: int, rows: int) -> PtyProcess:
    env = {**os.environ, "HOME": str(home), "PS1": "$ ", "TERM": "xterm-256color"}
    return PtyProcess.spawn(SHELL, cwd=str(home), env=env, dimensions=(rows, cols))


async def pty_host(endpoint: str, cols: int, rows: int, home: Path) -> None:
    """The relay floor's host process: a PTY read by a loop reader (no thread), its bytes sent
    on a ZeroMQ PAIR socket as they come, the socket's bytes written to the PTY."""
    context = zmq.asyncio.Context()
    socket = context.socket(zmq.PAIR)
    socket.connect(endpoint)
    now = zmq.Socket.shadow(socket.underlying)  # a send that never waits on the loop
    shell = spawn_shell(home, cols, rows)
    loop = asyncio.get_running_loop()
    ended = asyncio.Event()

    def readable() -> None:
        try:
            data = os.read(shell.fd, 65536)
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(shell.fd)
            ended.set()
            return
        now.send(data)

    loop.add_reader(shell.fd, readable)
    writes = asyncio.create_task(_write_to_pty(socket, shell.fd))
    await ended.wait()
    writes.cancel()
    socket.close(linger=0)
    context.term()


async def _write_to_pty(socket: zmq.asyncio.Socket, fd: int) -> None:
    while True:
        os.write(fd, await socket.recv())


# --- forge: a real `forge supervise` ----------------------------------------------------------


class Forge(SupervisorProcess):
    """The supervisor under measure: one project whose shell is the floor's bash."""

    def __init__(self, home: Path) -> None:
        project = home / "web"
        project.mkdir(parents=True)
        shell = home / "bash.sh"
        shell.write_text(f"#!/bin/sh\nexec {' '.join(SHELL)}\n", encoding="utf-8")
        shell.chmod(0o755)
        super().__init__(
            home,
            f'[[projects]]\norg = "bench"\nname = "web"\npath = "{project}"\nshell = "{shell}"\n',
            env={"HOME": str(home), "PS1": "$ "},
        )


# --- measuring in a page ----------------------------------------------------------------------


@dataclass
class Side:
    name: str
    page: Page
    cdp: CDPSession


async def renderer_cpu(browser_cdp: CDPSession) -> float:
    """CPU seconds of Chromium's renderer and GPU processes (the pages' own work)."""
    info = await browser_cdp.send("SystemInfo.getProcessInfo")
    return float(sum(p["cpuTime"] for p in info["processInfo"] if p["type"] in ("renderer", "GPU")))


async def task_seconds(cdp: CDPSession) -> float:
    metrics = await cdp.send("Performance.getMetrics")
    return next(float(m["value"]) for m in metrics["metrics"] if m["name"] == "TaskDuration")


async def samples(page: Page, tag: str) -> list[float]:
    values: list[float] = await page.evaluate(f"() => window.bench.samples[{tag!r}] ?? []")
    return values


async def settle(page: Page, tag: str, count: int, timeout_s: float = 10.0) -> None:
    """Until `count` samples of `tag` are in, or the timeout (a lost glyph is not waited for)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if len(await samples(page, tag)) >= count:
            return
        await asyncio.sleep(0.01)


async def keystrokes(side: Side, keys: int) -> tuple[list[float], list[float]]:
    """Type `keys` letters one at a time, each after the last one's glyph was painted; returns
    keydown -> painted and keydown -> its bytes handed to xterm.js (the wire and the server)."""
    page = side.page
    await page.evaluate(
        "() => { window.bench.samples.key = []; window.bench.samples.key_wire = [];"
        " window.bench.tag = 'key'; }"
    )
    letters = "abcdefghijklmnopqrstuvwxyz"
    for n in range(keys):
        if n and n % 40 == 0:
            await page.keyboard.press("Control+U")  # a fresh line; nothing runs
            await asyncio.sleep(0.1)
        await page.evaluate("() => { window.bench.waiting = []; }")  # a lost key waits no more
        before = len(await samples(page, "key"))
        await page.keyboard.press(letters[n % 26])
        await settle(page, "key", before + 1, 5.0)
    await page.keyboard.press("Control+U")
    return await samples(page, "key"), await samples(page, "key_wire")


async def flood(side: Side, browser_cdp: CDPSession, megabytes: int) -> dict[str, Any]:
    page = side.page
    command = f"yes {LINE} | head -c {megabytes * 1_000_000}; echo D''ONE"
    await page.evaluate("() => { window.bench.samples = {}; window.bench.tag = 'typing'; }")
    await page.keyboard.type(command)
    await settle(page, "typing", len(command))  # the command line is echoed whole
    await page.evaluate(
        f"() => {{ window.bench.samples = {{}}; window.bench.waiting = []; "
        f"window.bench.tag = 'end'; window.bench.expect = {ord(END_GLYPH)}; }}"
    )
    cpu_before, task_before = await renderer_cpu(browser_cdp), await task_seconds(side.cdp)
    started = time.monotonic()
    await page.keyboard.press("Enter")
    await page.evaluate("() => { window.bench.tag = 'flood'; }")
    typed = 0
    while not await samples(page, "end") and time.monotonic() - started < 300:
        await asyncio.sleep(0.2)
        if not await samples(page, "end"):
            await page.keyboard.press(FLOOD_KEY)
            typed += 1
    wall = time.monotonic() - started
    cpu, task = await renderer_cpu(browser_cdp), await task_seconds(side.cdp)
    end = await samples(page, "end")
    await settle(page, "flood", typed, 5.0)
    during = await samples(page, "flood")
    await page.keyboard.press("Control+U")
    return {
        "last_line_s": end[0] / 1000 if end else float("nan"),
        "wall_s": wall,
        "renderer_cpu_s": cpu - cpu_before,
        "main_thread_s": task - task_before,
        "typed": typed,
        "during": during,
    }


async def open_forge_terminal(browser: Browser, forge: Forge) -> Side:
    context = await browser.new_context(viewport=VIEWPORT)
    await context.add_init_script(f"localStorage.setItem('forge.token', {forge.token!r})")
    page = await context.new_page()
    await page.goto(f"{forge.url}#/seat/{SEAT}/terminal")
    await page.locator('[data-role="controller"]').wait_for()
    await page.locator('[data-terminal-state="idle"]').wait_for()
    await page.evaluate(MEASURE_JS)
    await page.locator(".term").click()
    await wait_for_prompt(page)
    cdp = await context.new_cdp_session(page)
    await cdp.send("Performance.enable")
    return Side("forge", page, cdp)


async def open_floor(
    browser: Browser, floor_url: str, size: tuple[int, int], name: str = "floor"
) -> Side:
    context = await browser.new_context(viewport=VIEWPORT)
    page = await context.new_page()
    await page.goto(f"{floor_url}/floor.html?w={size[0]}&h={size[1]}")
    await page.locator("body[data-open]").wait_for(state="attached")
    await page.evaluate(MEASURE_JS)
    await page.locator(".xterm").click()
    await wait_for_prompt(page)
    cdp = await context.new_cdp_session(page)
    await cdp.send("Performance.enable")
    return Side(name, page, cdp)


async def wait_for_prompt(page: Page) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text: str = await page.evaluate(
            "() => { const b = window.forgeTerminal.term.buffer.active;"
            " return b.getLine(b.cursorY + b.baseY).translateToString(true); }"
        )
        if text.rstrip().endswith("$"):
            return
        await asyncio.sleep(0.1)
    raise SystemExit(f"no prompt on {page.url}")


async def browser_tab(browser: Browser, forge: Forge, url: str, seconds: float) -> dict[str, Any]:
    """Forge's page viewing an animated tab with "low latency" on: received, drawn, latency."""
    context = await browser.new_context(viewport=VIEWPORT)
    await context.add_init_script(
        f"localStorage.setItem('forge.token', {forge.token!r});"
        "localStorage.setItem('forge.formats', 'webp,jpeg');"
    )
    page = await context.new_page()
    await page.goto(f"{forge.url}#/seat/{SEAT}/browser")
    await page.locator('[data-link="open"]').wait_for()
    address = page.get_by_label("address")
    await address.fill(url)
    await address.press("Enter")
    await page.locator('.browserpane [data-role="controller"]').wait_for()
    deadline = time.monotonic() + 60
    while not await page.evaluate("() => (window.forgeBrowser?.drawn ?? 0) > 3"):
        if time.monotonic() > deadline:
            raise SystemExit("no frame drawn in forge's browser pane")
        await asyncio.sleep(0.1)
    await asyncio.sleep(2)  # past the first key frames
    await page.evaluate(FRAMES_JS)
    started = time.monotonic()
    await asyncio.sleep(seconds)
    stats: dict[str, Any] = await page.evaluate(
        "() => { const h = window.forgeBrowser, s = window.benchFrames;"
        " return {received: h.received - s.start[0], drawn: h.drawn - s.start[1],"
        " draws: s.draws, formats: s.formats}; }"
    )
    stats["seconds"] = time.monotonic() - started
    await context.close()
    return stats


# --- the agent stream: a model text delta -> painted, forge's Agent pane beside a floor page ---

AGENT_LABEL = "stream"
AGENT_SEAT = {"org": "bench", "project": "agent", "label": AGENT_LABEL}
AGENT_CHROMIUM_ARGS = ["--disable-features=LocalNetworkAccessChecks"]
"""The agent floor page is served by Playwright's router at forge's origin; Chromium would
count it a public page and refuse its socket to loopback."""
JITTER_MS = 1.0
"""A frame on time at 60 Hz reads 16.6-16.8 ms between animation frames (the clock is coarse):
a frame counts as over 16.7 ms past this much more."""
AGENT_WITHIN_MS = 180_000
"""How long the CLI may take to start or answer on a loaded machine."""

FLOOR_AGENT_HTML = """<!doctype html><html><head><meta charset=utf-8></head><body>
<div id=text style="white-space:pre-wrap;font:14px sans-serif"></div><script>
// The agent stream's floor: forge's socket, the seat's chat_appended text deltas into a div.
const seat = SEAT, out = document.getElementById("text");
const floor = window.floor = {ends: 0, ready: false};
const url = new URL("/socket", location.href);
url.protocol = "ws:";
const ws = new WebSocket(url, ["forge.v1", "forge.token." + TOKEN]);
ws.onmessage = (event) => {
  if (typeof event.data !== "string") return;
  const frame = JSON.parse(event.data);
  const subscribe = {kind: "subscribe", what: {session: seat}};
  if (frame.kind === "greeting") ws.send(JSON.stringify(subscribe));
  else if (frame.kind === "snapshot" && frame.subject.session) floor.ready = true;
  else if (frame.kind === "update" && typeof frame.update === "object") {
    const msg = frame.update.chat_appended?.msg;
    if (msg?.type === "delta" && msg.kind === "text") out.append(msg.text);
    else if (frame.update.prompt_lifecycle?.phase === "ended") floor.ends += 1;
  }
};
floor.prompt = (text) =>
  ws.send(JSON.stringify({kind: "command", command: {prompt: {key: seat, text}}}));
</script></body></html>"""

PAINT_JS = """() => {
    // When the awaited text is in the DOM, the next animation frame paints it: stamp that frame
    // on the wall clock (the model server stamps the delta's leaving on the same clock).
    const paint = window.paint = {wanted: null, at: {}, arrived: {}};
    new MutationObserver(() => {
        const marker = paint.wanted;
        if (marker === null || !document.body.textContent.includes(marker)) return;
        paint.wanted = null;
        const stamp = () => { paint.at[marker] = performance.timeOrigin + performance.now(); };
        requestAnimationFrame(stamp);
    }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""

ARRIVAL_JS = """
// Before the page's own code: every socket's frame holding the awaited text is stamped as it
// arrives, ahead of the page's handlers (the part of delta -> paint spent before the page).
const NativeSocket = window.WebSocket;
window.WebSocket = class extends NativeSocket {
    constructor(...args) {
        super(...args);
        this.addEventListener("message", (event) => {
            const paint = window.paint, marker = paint?.wanted;
            if (marker && typeof event.data === "string" && event.data.includes(marker))
                paint.arrived[marker] ??= performance.timeOrigin + performance.now();
        });
    }
};
"""

SCROLL_JS = """async ([frames, step]) => {
    // Scroll the conversation `step` pixels a frame for `frames` frames (turning at either end),
    // each frame's time from the one before it as the page's animation frames see it.
    const box = document.querySelector(".convo");
    box.scrollTop = 0;
    await new Promise((ready) => requestAnimationFrame(() => requestAnimationFrame(ready)));
    const deltas = [];
    let last = null, direction = 1;
    return await new Promise((done) => {
        const frame = (now) => {
            if (last !== null) deltas.push(now - last);
            last = now;
            if (deltas.length >= frames) {
                const turns = box.querySelectorAll(".turn").length;
                done({deltas, height: box.scrollHeight, turns});
                return;
            }
            const end = box.scrollHeight - box.clientHeight;
            if ((direction > 0 && box.scrollTop >= end) || (direction < 0 && box.scrollTop <= 0))
                direction = -direction;
            box.scrollTop += direction * step;
            requestAnimationFrame(frame);
        };
        requestAnimationFrame(frame);
    });
}"""


class AgentForge(SupervisorProcess):
    """The supervisor whose agent seat streams: one git project, its CLI pointed at the model
    server."""

    def __init__(self, home: Path, model_url: str) -> None:
        project = home / "agent"
        project.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
        super().__init__(home, f'[[projects]]\norg = "bench"\nname = "agent"\npath = "{project}"\n')
        self.env = unsteered(self.env) | cli_env(model_url, home)


@dataclass
class Stamps:
    """When each request's first text delta left the model server, wall clock in ms."""

    sent: dict[int, float]

    def on_sent(self, request: RecordedRequest, event: Event) -> None:
        if event.delta and request.number not in self.sent:
            self.sent[request.number] = time.time() * 1000


def reply(n: int) -> tuple[str, str]:
    """Turn `n`'s answer, and its first delta (the script's 16 characters), unique to it."""
    text = (
        f"Answer {n:05d}: here is what changed, with a list:\n\n- the **parser** keeps its "
        f"state\n- the tests cover turn {n}\n\n```python\nprint({n})\n```\nEnd {n:05d}."
    )
    return text, text[:16]


def agent_script(turns: int) -> dict[str, Any]:
    """Each turn held before its first delta until the bench releases it."""
    return {
        "turns": [
            {"when": {"user_text": f"Turn {n}."}, "say": reply(n)[0], "stall": {"after": 0}}
            for n in range(turns)
        ]
    }


async def clock_offset(page: Page) -> float:
    """The page's wall clock minus this process's, in ms, from the quickest of 15 round trips
    (off by at most half of it)."""
    best = (float("inf"), 0.0)
    for _ in range(15):
        before = time.time() * 1000
        seen: float = await page.evaluate("() => performance.timeOrigin + performance.now()")
        after = time.time() * 1000
        best = min(best, (after - before, seen - (before + after) / 2))
    return best[1]


async def wait_in_page(page: Page, condition: str, what: str) -> None:
    try:
        await page.wait_for_function(condition, timeout=AGENT_WITHIN_MS)
    except Exception as error:
        raise SystemExit(f"{what} never came on {page.url}: {error}") from error


async def open_agent_pane(browser: Browser, forge: AgentForge) -> Page:
    context = await browser.new_context(viewport=VIEWPORT)
    await context.add_init_script(f"localStorage.setItem('forge.token', {forge.token!r})")
    await context.add_init_script(ARRIVAL_JS)
    page = await context.new_page()
    await page.goto(f"{forge.url}#/seat/bench/agent/{AGENT_LABEL}")
    await page.locator("[data-agent-pane]").wait_for(timeout=AGENT_WITHIN_MS)
    await page.evaluate(PAINT_JS)
    return page


async def open_agent_floor(browser: Browser, forge: AgentForge) -> Page:
    """The floor page, served at forge's own origin (so its socket is same-origin as forge's
    page's) by Playwright's router: nothing of forge's page is loaded."""
    context = await browser.new_context(viewport=VIEWPORT)
    await context.add_init_script(ARRIVAL_JS)
    page = await context.new_page()
    html = FLOOR_AGENT_HTML.replace("SEAT", json.dumps(AGENT_SEAT)).replace(
        "TOKEN", json.dumps(forge.token)
    )
    await page.route(f"{forge.url}floor-agent.html", lambda route: route.fulfill(
        status=200, content_type="text/html", body=html
    ))  # fmt: skip
    await page.goto(f"{forge.url}floor-agent.html")
    await wait_in_page(page, "() => window.floor.ready", "the floor's session snapshot")
    await page.evaluate(PAINT_JS)
    return page


async def agent_turn(
    page: Page, floor: bool, server: ModelServer, stamps: Stamps, n: int, settle: float,
    offset: float,
) -> tuple[float, float]:  # fmt: skip
    """Prompt turn `n` from the page, hold its reply before the first delta, release it after
    `settle` s of quiet; ms from the delta leaving the model server to the frame painting it,
    and to its frame arriving in the page."""
    text, marker = reply(n)
    ends = await page.evaluate("() => window.floor.ends") if floor else 0
    if floor:
        await page.evaluate(f"() => window.floor.prompt({f'Turn {n}.'!r})")
    else:
        await page.get_by_label("prompt", exact=True).fill(f"Turn {n}.")
        await page.get_by_role("button", name="Send").click()
    async with asyncio.timeout(AGENT_WITHIN_MS / 1000):
        held = await server.wait_stalled()
    await page.evaluate(f"() => {{ window.paint.wanted = {marker!r}; }}")
    await asyncio.sleep(settle)
    server.release()
    await wait_in_page(page, f"() => window.paint.at[{marker!r}] !== undefined", "the paint")
    painted, arrived = await page.evaluate(
        f"() => [window.paint.at[{marker!r}], window.paint.arrived[{marker!r}]]"
    )
    end = text.rsplit("\n", 1)[1]
    if floor:
        await wait_in_page(page, f"() => window.floor.ends > {ends}", "the turn's end")
    else:
        await wait_in_page(
            page,
            "() => !document.querySelector('[data-streaming]') && document.querySelector("
            f"'[data-turn-state]').textContent === 'idle' && document.body.textContent"
            f".includes({end!r})",
            "the turn's end",
        )
    sent = stamps.sent[held.number] + offset
    return painted - sent, arrived - sent


async def agent_stream(browser: Browser, args: argparse.Namespace, home: Path) -> dict[str, Any]:
    """Turns alternate between the two pages in blocks (only one page is open at a time, so
    neither pays for the other's work); each page's first turn is a warm-up, not counted."""
    stamps = Stamps({})
    blocks = -(-args.agent_turns // args.agent_block)
    script = parse_script(agent_script(2 * blocks * (args.agent_block + 1)))
    results: dict[str, Any] = {
        f"{what}_{name}": [] for what in ("stream", "arrived") for name in ("forge", "floor")
    }
    async with ModelServer(script, on_sent=stamps.on_sent) as server:
        forge = AgentForge(home / "agent-forge", server.url)
        forge.start()
        try:
            progress("starting the agent seat from Home")
            page = await browser.new_page(viewport=VIEWPORT)
            await page.goto(forge.url + f"#token={forge.token}")
            card = page.locator('[data-project="bench/agent"]')
            await card.get_by_label("seat label for bench/agent").fill(AGENT_LABEL)
            await card.get_by_role("button", name="Start agent").click()
            await page.locator("[data-agent-pane]").wait_for(timeout=AGENT_WITHIN_MS)
            await page.context.close()
            turn = itertools.count()
            for block in range(2 * blocks):
                floor = block % 2 == 1
                name = "floor" if floor else "forge"
                progress(f"agent stream: {name}, block {block // 2 + 1} of {blocks}")
                opened = await (open_agent_floor if floor else open_agent_pane)(browser, forge)
                offset = await clock_offset(opened)
                for k in range(args.agent_block + 1):
                    painted, arrived = await agent_turn(
                        opened, floor, server, stamps, next(turn), args.settle, offset
                    )
                    if k:
                        results[f"stream_{name}"].append(painted)
                        results[f"arrived_{name}"].append(arrived)
                await opened.context.close()
            results["unscripted"] = sum(r.outcome == "unscripted" for r in server.requests)
            results["scroll"] = await long_conversation(browser, forge, args)
        finally:
            forge.stop()
    return results


# --- a long conversation scrolled ---------------------------------------------------------------


def long_turn_rows(user: dict[str, Any], assistant: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """Turn `n` as the CLI writes it, built on a prompt row and an answer row it wrote: the
    prompt, then (every fifth turn) a Bash call and its result, then a markdown answer."""
    rows: list[dict[str, Any]] = []

    def row(template: dict[str, Any], content: Any) -> None:
        copy = json.loads(json.dumps(template))
        copy["uuid"] = str(uuid.uuid4())
        copy["parentUuid"] = rows[-1]["uuid"] if rows else template.get("parentUuid")
        copy["message"]["content"] = content
        if copy["type"] == "assistant":
            copy["message"]["id"] = f"msg_bench_{n}_{len(rows)}"
        rows.append(copy)

    row(user, f"Turn {n} of the long conversation: tidy the parser and run its tests.")
    if n % 5 == 0:
        call = f"toolu_bench_{n}"
        command = {"command": f"pytest -q tests/test_parser.py -k case_{n}"}
        row(assistant, [{"type": "tool_use", "id": call, "name": "Bash", "input": command}])
        output = f"....\n4 passed in 0.{n % 10}2s"
        row(user, [{"type": "tool_result", "tool_use_id": call, "content": output}])
    row(assistant, [{"type": "text", "text": reply(n)[0]}])
    return rows


def lengthen_transcript(home: Path, turns: int) -> Path:
    """Append `turns` turns to the seat's transcript (the CLI's own file, the CLI idle), each
    built on the rows the CLI wrote for the stream's turns."""
    path = max((home / "claude-config" / "projects").glob("*/*.jsonl"), key=os.path.getmtime)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    user = next(
        r for r in reversed(rows)
        if r.get("type") == "user" and isinstance(r["message"].get("content"), str)
    )  # fmt: skip
    assistant = next(
        r for r in reversed(rows)
        if r.get("type") == "assistant"
        and any(b.get("type") == "text" for b in r["message"].get("content", []))
    )  # fmt: skip
    with path.open("a", encoding="utf-8") as out:
        for n in range(turns):
            for row in long_turn_rows(user, assistant, n):
                out.write(json.dumps(row) + "\n")
    return path


async def long_conversation(
    browser: Browser, forge: AgentForge, args: argparse.Namespace
) -> dict[str, Any]:
    """The seat's conversation at `--long-turns` more turns, read into a fresh Agent pane by
    scrolling to its top until no older page is left (`more`), then scrolled frame by frame."""
    progress(f"a conversation of {args.long_turns} more turns")
    lengthen_transcript(forge.root, args.long_turns)
    page = await open_agent_pane(browser, forge)
    started = time.monotonic()
    pages = 0
    while await page.locator("button.older").count():
        held = await page.locator(".turn").count()
        await page.evaluate(
            "() => { const box = document.querySelector('.convo');"
            " if (box.scrollTop > 0) box.scrollTop = 0;"
            " else document.querySelector('button.older').click(); }"
        )
        await wait_in_page(
            page, f"() => document.querySelectorAll('.turn').length > {held}", "an older page"
        )
        pages += 1
    loaded = time.monotonic() - started
    progress(f"scrolling {args.scroll_frames} frames")
    scrolled: dict[str, Any] = await page.evaluate(
        SCROLL_JS, [args.scroll_frames, args.scroll_step]
    )
    await page.context.close()
    return {**scrolled, "pages": pages, "load_s": loaded}


async def terminal(browser: Browser, args: argparse.Namespace, home: Path) -> dict[str, Any]:
    """Keystrokes, floods and the browser tab: forge's terminal page beside the floors."""
    forge = Forge(home / "forge")
    files = home / "floor"
    progress("building the floor page")
    build_floor(files)
    floor_home = home / "floor-home"
    floor_home.mkdir()
    floor = Floor(files, floor_home)
    relay = Floor(files, floor_home, relay=True)
    forge.start()
    results: dict[str, Any] = {}
    try:
        async with floor.serving() as floor_url, relay.serving() as relay_url:
            browser_cdp = await browser.new_browser_cdp_session()
            progress("opening forge's page")
            forge_side = await open_forge_terminal(browser, forge)
            box = await forge_side.page.locator(".term").bounding_box()
            assert box is not None
            progress("opening the floor page")
            size = (int(box["width"]), int(box["height"]))
            floor_side = await open_floor(browser, floor_url, size)
            progress("opening the relay floor page")
            relay_side = await open_floor(browser, relay_url, size, name="relay")
            sides = [forge_side, floor_side]
            grids = {
                s.name: await s.page.evaluate(
                    "() => [window.forgeTerminal.term.cols, window.forgeTerminal.term.rows,"
                    " document.querySelector('.xterm-screen canvas') ? 'WebGL' : 'DOM']"
                )
                for s in [*sides, relay_side]
            }
            results["grids"] = grids
            progress("keystrokes, ten at a time on each page in turn")
            typed = [forge_side, floor_side, relay_side]
            for block in range(0, args.keys, 10):
                for side in typed if block % 20 == 0 else typed[::-1]:
                    painted, wire = await keystrokes(side, min(10, args.keys - block))
                    results.setdefault(f"keys_{side.name}", []).extend(painted)
                    results.setdefault(f"wire_{side.name}", []).extend(wire)
            for repeat in range(args.repeats):
                for side in sides if repeat % 2 == 0 else sides[::-1]:
                    progress(f"flood {repeat + 1}: {side.name}")
                    results.setdefault(f"flood_{side.name}", []).append(
                        await flood(side, browser_cdp, args.mb)
                    )
            progress("browser tab at 30 fps, JPEG motion")
            results["tab"] = await browser_tab(
                browser, forge, f"{floor_url}/animated.html", args.seconds
            )
            for side in [*sides, relay_side]:
                await side.page.context.close()
    finally:
        forge.stop()
    return results


async def run(args: argparse.Namespace) -> None:
    load_before = os.getloadavg()
    home = Path(tempfile.mkdtemp(prefix="forge-bench-web-"))
    results: dict[str, Any] = {}
    try:
        async with async_playwright() as playwright:
            for part, measure, flags in (
                ("terminal", terminal, []),
                ("agent", agent_stream, AGENT_CHROMIUM_ARGS),
            ):
                if part in args.only:
                    browser = await playwright.chromium.launch(
                        executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *flags]
                    )
                    results.update(await measure(browser, args, home))
                    await browser.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)
    header(load_before, os.getloadavg())
    if "terminal" in args.only:
        report(args, results)
    if "agent" in args.only:
        report_agent(args, results)


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def header(load_before: tuple[float, float, float], load_after: tuple[float, float, float]) -> None:
    def loads(load: tuple[float, float, float]) -> str:
        return " ".join(f"{value:.2f}" for value in load)

    print(f"# bench/webclient.py  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"# {platform.node()}  {os.cpu_count()} CPUs ({cpu_model()})  {platform.platform()}")
    print(f"# load average before: {loads(load_before)}   after: {loads(load_after)}")
    print(f"# Chromium {CHROMIUM} {' '.join(CHROMIUM_ARGS)}")


def report(args: argparse.Namespace, results: dict[str, Any]) -> None:
    print(f"# terminal grids {results['grids']}")
    keys = {name: results[f"keys_{name}"] for name in ("forge", "floor", "relay")}
    for name, values in keys.items():
        print(
            f"{name:<6} keystroke->paint  p50 {percentile(values, 0.5):6.1f} ms"
            f"   p99 {percentile(values, 0.99):6.1f} ms   ({len(values)} of {args.keys} keys)"
        )
    for name in ("forge", "floor", "relay"):
        wire = results[f"wire_{name}"]
        print(
            f"{name:<6}   of which keydown->bytes in the page  p50"
            f" {percentile(wire, 0.5):6.1f} ms   p99 {percentile(wire, 0.99):6.1f} ms"
            "   (the rest is xterm.js's parse and render)"
        )
    p50 = percentile(keys["forge"], 0.5) / percentile(keys["floor"], 0.5)
    p99 = percentile(keys["forge"], 0.99) / percentile(keys["floor"], 0.99)
    print(f"forge/floor keystroke->paint: p50 {p50:.2f}x (goal <= 1.2)   p99 {p99:.2f}x")
    p50 = percentile(keys["forge"], 0.5) / percentile(keys["relay"], 0.5)
    p99 = percentile(keys["forge"], 0.99) / percentile(keys["relay"], 0.99)
    print(f"forge/relay keystroke->paint: p50 {p50:.2f}x   p99 {p99:.2f}x   (architecture's floor)")
    floods = {name: results[f"flood_{name}"] for name in ("forge", "floor")}
    best: dict[str, dict[str, Any]] = {}
    for name, runs in floods.items():
        for n, run in enumerate(runs, 1):
            during = run["during"]
            print(
                f"{name:<6} flood {args.mb} MB #{n}: last line {run['last_line_s']:6.2f} s"
                f"   renderer+GPU CPU {run['renderer_cpu_s']:6.2f} s"
                f"   main thread {run['main_thread_s']:6.2f} s"
                f"   keys during: p50 {percentile(during, 0.5):7.1f} ms"
                f" p99 {percentile(during, 0.99):7.1f} ms ({len(during)} of {run['typed']} painted)"
            )
        best[name] = min(runs, key=lambda r: r["last_line_s"])
    during_all = {name: [v for r in runs for v in r["during"]] for name, runs in floods.items()}
    cpu = {name: min(r["renderer_cpu_s"] for r in runs) for name, runs in floods.items()}
    last = best["forge"]["last_line_s"] / best["floor"]["last_line_s"]
    during = percentile(during_all["forge"], 0.99) / percentile(during_all["floor"], 0.99)
    print(
        f"forge/floor flood: last line {last:.2f}x   renderer+GPU CPU"
        f" {cpu['forge'] / cpu['floor']:.2f}x   keys during p99 {during:.2f}x (goal <= 1.5)"
        "   (best runs; keys over all runs)"
    )
    tab = results["tab"]
    seconds = tab["seconds"]
    draws = tab["draws"]
    share = tab["drawn"] / tab["received"] if tab["received"] else float("nan")
    print(
        f"forge  browser tab (30 fps page, JPEG motion, {seconds:.1f} s): received"
        f" {tab['received'] / seconds:5.1f} fps   drawn {tab['drawn'] / seconds:5.1f} fps"
        f"   drawn/received {share:.1%} (goal >= 95%)   draw latency p50"
        f" {percentile(draws, 0.5):5.1f} ms p99 {percentile(draws, 0.99):5.1f} ms"
        f"   formats {tab['formats']} (1 WebP, 2 JPEG)"
    )
    if draws:
        print(f"#      draw latency mean {statistics.fmean(draws):.1f} ms over {len(draws)} frames")


def report_agent(args: argparse.Namespace, results: dict[str, Any]) -> None:
    print(
        f"# agent stream: {args.agent_turns} turns a page in blocks of {args.agent_block} (each"
        f" block after a warm-up turn), settle {args.settle} s; requests no turn answered:"
        f" {results['unscripted']}"
    )
    stream = {name: results[f"stream_{name}"] for name in ("forge", "floor")}
    for name, values in stream.items():
        print(
            f"{name:<6} model delta->paint  p50 {percentile(values, 0.5):6.1f} ms"
            f"   p90 {percentile(values, 0.9):6.1f} ms   ({len(values)} turns)"
        )
    for name in stream:
        arrived = results[f"arrived_{name}"]
        print(
            f"{name:<6}   of which delta->frame in the page  p50 {percentile(arrived, 0.5):6.1f} ms"
            f"   p90 {percentile(arrived, 0.9):6.1f} ms   (the rest is the page's work and paint)"
        )
    p50 = percentile(stream["forge"], 0.5) / percentile(stream["floor"], 0.5)
    p90 = percentile(stream["forge"], 0.9) / percentile(stream["floor"], 0.9)
    print(f"forge/floor model delta->paint: p50 {p50:.2f}x (goal <= 1.2)   p90 {p90:.2f}x")
    scroll = results["scroll"]
    frames = scroll["deltas"]
    over = sum(f > 1000 / 60 + JITTER_MS for f in frames) / len(frames)
    dropped = sum(f > 1.5 * 1000 / 60 for f in frames) / len(frames)
    print(
        f"forge  scrolling {scroll['turns']} turns ({scroll['height']} px, read in"
        f" {scroll['pages']} pages in {scroll['load_s']:.1f} s), {args.scroll_step} px a frame:"
        " frame time"
        f" p50 {percentile(frames, 0.5):5.1f} ms   p95 {percentile(frames, 0.95):5.1f} ms"
        f"   over 16.7 ms (+{JITTER_MS:g} ms) {over:.1%}"
        f"   over 25 ms (a frame missed) {dropped:.1%}"
        f"   ({len(frames)} frames)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=100, help="keystrokes timed per page")
    parser.add_argument("--mb", type=int, default=20, help="flood size in MB")
    parser.add_argument("--repeats", type=int, default=2, help="floods per page, alternating")
    parser.add_argument("--seconds", type=float, default=10.0, help="browser tab window")
    parser.add_argument(
        "--floor-loop",
        choices=("asyncio", "uvloop"),
        default="asyncio",
        help="the floor server's event loop (forge's processes run on uvloop)",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=("terminal", "agent"),
        default=["terminal", "agent"],
        help="the parts to run",
    )
    parser.add_argument("--agent-turns", type=int, default=30, help="agent turns timed per page")
    parser.add_argument("--agent-block", type=int, default=5, help="agent turns per page opening")
    parser.add_argument("--settle", type=float, default=0.2, help="quiet seconds before a delta")
    parser.add_argument(
        "--long-turns", type=int, default=2000, help="turns of the scrolled conversation"
    )
    parser.add_argument("--scroll-frames", type=int, default=600, help="frames scrolled")
    parser.add_argument("--scroll-step", type=int, default=48, help="pixels scrolled a frame")
    parser.add_argument("--pty-host", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pty_host:
        endpoint, cols, rows, home = args.pty_host
        eventloop.run(pty_host(endpoint, int(cols), int(rows), Path(home)))
        return
    print(f"# floor server's event loop: {args.floor_loop}")
    if args.floor_loop == "uvloop":
        eventloop.run(run(args))
    else:
        asyncio.run(run(args))


if __name__ == "__main__":
    main()
