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
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
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


async def run(args: argparse.Namespace) -> None:
    load_before = os.getloadavg()
    home = Path(tempfile.mkdtemp(prefix="forge-bench-web-"))
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
        async with (
            floor.serving() as floor_url,
            relay.serving() as relay_url,
            async_playwright() as playwright,
        ):
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
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
            await browser.close()
    finally:
        forge.stop()
        shutil.rmtree(home, ignore_errors=True)
    report(args, results, load_before, os.getloadavg())


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def report(
    args: argparse.Namespace,
    results: dict[str, Any],
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
) -> None:
    def loads(load: tuple[float, float, float]) -> str:
        return " ".join(f"{value:.2f}" for value in load)

    print(f"# bench/webclient.py  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"# {platform.node()}  {os.cpu_count()} CPUs ({cpu_model()})  {platform.platform()}")
    print(f"# load average before: {loads(load_before)}   after: {loads(load_after)}")
    print(f"# Chromium {CHROMIUM} {' '.join(CHROMIUM_ARGS)}; grids {results['grids']}")
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
