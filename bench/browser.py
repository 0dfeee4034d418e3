"""Browser host benchmark: frames/s, paint->viewer and input->visible latency, CPU per viewer.

One run compares, side by side, WebP motion (format 1) and JPEG passthrough (format 2) for an
animated 1280x720 page with 1, 4 and 16 viewers, and a phone viewport (1170x2532 at 3x) with one.
A real supervisor (its own process, this script with --serve) hosts the browser verbs; the viewers
are websockets clients in this process. The page stamps Date.now() into its pixels as 40 black or
white blocks, so a viewer reads the paint time off each frame it receives.

    .venv/bin/python -P bench/browser.py [--seconds 4]

"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import psutil
from PIL import Image
from websockets.asyncio.client import ClientConnection, connect

from forge.client.auth import subprotocols
from forge.testing.pages import page_of, serve_in_thread
from forge.wire.binary import BROWSER_FRAME_HEADER, FORMAT_JPEG, browser_frame
from forge.wire.client import Press
from forge.workers.browser.cdp import CdpEvent
from forge.workers.browser.transport import CdpConnection

SEAT = {"org": "bench", "project": "proj", "label": "lead"}
BITS = 32
"""The page stamps Date.now() modulo 2^32 ms; the reader unwraps it against its own clock."""
BLOCK = 10
TAP_WINDOW_S = 0.6
"""Frames are kept this long after a tap and read afterwards: a viewer decoding them as they
come would take CPU from Chromium and the host on this machine (a phone decodes on its own)."""

PAGE = f"""<!doctype html><meta name="viewport" content="width=device-width, initial-scale=1">
<body style="margin:0;overflow:hidden">
<canvas id=c style="display:block"></canvas><script>
const c = document.getElementById('c'), x = c.getContext('2d');
let hue = 0, marker = 'rgb(255,0,0)';
function fit() {{  // the layout viewport: innerWidth can pass through a desktop width on a resize
  const e = document.documentElement;
  if (c.width !== e.clientWidth || c.height !== e.clientHeight) {{
    c.width = e.clientWidth; c.height = e.clientHeight; }} }}
addEventListener('pointerdown', () => {{  // once per tap: touch also fires a compat mousedown
  marker = marker === 'rgb(255,0,0)' ? 'rgb(0,0,255)' : 'rgb(255,0,0)'; }});
function frame() {{
  fit();
  hue = (hue + 3) % 360;
  x.fillStyle = `hsl(${{hue}},70%,50%)`; x.fillRect(0, 0, c.width, c.height);
  for (let i = 0; i < 200; i++) {{
    x.fillStyle = `hsl(${{(hue + i * 7) % 360}},80%,60%)`;
    x.fillRect((i * 37 + hue * 5) % c.width, (i * 53) % c.height, 40, 40); }}
  const now = Date.now();
  for (let i = 0; i < {BITS}; i++) {{
    x.fillStyle = Math.floor(now / 2 ** i) % 2 ? '#fff' : '#000';  // low 32 bits
    x.fillRect(i * {BLOCK}, 0, {BLOCK}, {BLOCK}); }}
  x.fillStyle = marker; x.fillRect(0, 64, 96, 96);
  requestAnimationFrame(frame);
}}
frame();
</script>"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def serve(config: Path, port: int) -> None:
    """The supervisor process: the browser verbs over a worker manager, until killed."""
    from forge.config import load_config
    from forge.ipc.manager import WorkerManager
    from forge.supervisor.browser import service as browsers
    from forge.supervisor.socket.core import Supervisor
    from forge.supervisor.socket.server import SocketServer

    supervisor = Supervisor(load_config(config, overrides={"server.port": port}))
    async with WorkerManager() as manager:
        browsers.install(supervisor, manager)
        server = SocketServer(supervisor)
        await server.start()
        print("ready", flush=True)
        await asyncio.Event().wait()


def read_stamp(image: Image.Image, scale: float) -> int:
    """The low 32 bits of the Date.now() the page drew into its first row of blocks."""
    value = 0
    rgb = image.convert("L")
    for bit in range(BITS):
        x, y = int((bit * BLOCK + BLOCK / 2) * scale), int(BLOCK / 2 * scale)
        if rgb.getpixel((x, y)) > 128:  # type: ignore[operator]
            value |= 1 << bit
    return value


def marker_is_blue(image: Image.Image, scale: float) -> bool:
    pixel = image.convert("RGB").getpixel((int(48 * scale), int(112 * scale)))
    assert isinstance(pixel, tuple)
    return bool(pixel[2] > 150 and pixel[0] < 100)


class Viewer:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.frames: list[tuple[float, bytes]] = []
        self.replies: dict[str, Any] = {}
        self.asks = 0
        self.keep = False
        self.replied = asyncio.Event()
        self.task = asyncio.ensure_future(self.read())

    async def read(self) -> None:
        async for message in self.ws:
            if isinstance(message, str):
                decoded = json.loads(message)
                if decoded["kind"] == "reply":
                    self.replies[decoded["reply_to"]] = decoded["body"]
                    self.replied.set()
            else:
                self.frames.append((time.time(), message if self.keep else message[:19]))

    async def ask(self, message: dict[str, Any]) -> Any:
        self.asks += 1
        key = f"b{self.asks}"
        await self.ws.send(json.dumps({**message, "reply_to": key}))
        while key not in self.replies:
            self.replied.clear()
            await self.replied.wait()
        return self.replies.pop(key)

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))


def cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def decode(data: bytes) -> tuple[Image.Image, float]:
    header = BROWSER_FRAME_HEADER.unpack_from(data)
    image = Image.open(io.BytesIO(data[BROWSER_FRAME_HEADER.size :]))
    image.load()
    return image, header[4] / header[8]  # device width / page width


class Frames(Protocol):
    """What a measurement reads: frames as they arrived (kind-1 bytes; only the header unless
    `keep`)."""

    frames: list[tuple[float, bytes]]
    keep: bool


Tap = Callable[[], Awaitable[None]]


async def measure(
    lead: Frames, streams: Sequence[Frames], tap: Tap, cpu: dict[str, list[psutil.Process]],
    seconds: float,
) -> dict[str, Any]:  # fmt: skip
    """Frames/s per stream, paint->arrival off the lead's frames, CPU % of each process group
    over the window, then input->visible: 12 taps, each until the marker changes colour."""
    lead.keep = True
    for stream in streams:
        stream.frames.clear()
    before = {name: cpu_seconds(group) for name, group in cpu.items()}
    started = time.time()
    await asyncio.sleep(seconds)
    elapsed = time.time() - started
    used = {f"{n}_cpu": (cpu_seconds(g) - before[n]) / elapsed * 100 for n, g in cpu.items()}
    lead.keep = False
    measured = list(lead.frames)
    fps = [len(stream.frames) / elapsed for stream in streams]
    latencies = []
    for arrived, data in measured[:: max(1, len(measured) // 40)]:
        image, ratio = await asyncio.to_thread(decode, data)
        latencies.append((int(arrived * 1000) - read_stamp(image, ratio)) % 2**BITS)

    visible = []
    for _ in range(12):
        lead.frames.clear()
        lead.keep = True
        await asyncio.sleep(0.25)
        last = lead.frames[-1][1] if lead.frames else None
        blue_before = marker_is_blue(*decode(last)) if last else False
        sent = time.time()
        await tap()
        await asyncio.sleep(TAP_WINDOW_S)
        lead.keep = False
        for arrived, data in [(a, d) for a, d in lead.frames if a >= sent]:
            image, ratio = await asyncio.to_thread(decode, data)
            if marker_is_blue(image, ratio) != blue_before:
                visible.append((arrived - sent) * 1000)
                break
    return {
        "fps": statistics.median(fps),
        "fps_min": min(fps),
        "paint_p50": statistics.median(latencies) if latencies else float("nan"),
        "paint_p90": _p90(latencies),
        "input_p50": statistics.median(visible) if visible else float("nan"),
        "input_p90": _p90(visible),
        "laid_out": {BROWSER_FRAME_HEADER.unpack_from(data)[8:10] for _, data in measured},
        **used,
    }


def _check_layout(row: dict[str, Any], size: tuple[int, int, float]) -> None:
    width, height, scale = size
    if row.pop("laid_out") != {(round(width / scale), round(height / scale))}:
        raise SystemExit(f"{width}x{height}@{scale:g}: frames were laid out at another size")


async def scenario(
    url: str, page: str, supervisor: psutil.Process, *, viewers: int, jpeg: bool,
    size: tuple[int, int, float], seconds: float, seq: list[int],
) -> dict[str, Any]:  # fmt: skip
    query = "?formats=webp,jpeg" if jpeg else ""
    clients = [
        Viewer(await connect(url + query, max_size=None, subprotocols=subprotocols()))
        for _ in range(viewers)
    ]
    lead = clients[0]
    tab = (await lead.ask({"kind": "browser_open", "seat": SEAT, "url": page}))["tab"]
    for client in clients:
        await client.ask({"kind": "browser_view", "seat": SEAT, "tab": tab})
    await lead.send({"kind": "browser_control", "take": True})
    width, height, scale = size
    await lead.send({"kind": "browser_resize", "width": width, "height": height, "scale": scale})
    host = next(
        p for p in supervisor.children() if "forge.workers.browser" in " ".join(p.cmdline())
    )
    await asyncio.sleep(1.5)

    async def tap() -> None:
        for down in (True, False):
            seq[0] += 1
            press = {"press": {"x": 48, "y": 112, "button": "left", "down": down}}
            await lead.send({"kind": "browser_input", "seq": seq[0], "event": press})

    cpu = {
        "host": [host],
        "chromium": host.children(recursive=True),
        "supervisor": [supervisor],
    }
    row = await measure(lead, clients, tap, cpu, seconds)
    _check_layout(row, size)
    await lead.send({"kind": "browser_navigate", "url": "about:blank"})
    await asyncio.sleep(0.3)
    for client in clients:
        await client.ws.close()
        client.task.cancel()
    return {
        "format": "jpeg" if jpeg else "webp",
        "viewport": f"{width}x{height}@{scale:g}",
        "viewers": viewers,
        **row,
    }


class CdpFloor:
    """The floor: the same Chromium, flags, page, viewport and screencast as the host, read
    straight off CDP by this process (no host, IPC, supervisor or WebSocket), each frame
    acknowledged as it arrives. What any relay of Chromium's screencast starts from."""

    def __init__(self) -> None:
        self.frames: list[tuple[float, bytes]] = []
        self.keep = False
        self.page_size = (0, 0)
        self.cdp: CdpConnection | None = None

    def on_event(self, event: CdpEvent) -> None:
        if event.method != "Page.screencastFrame" or self.cdp is None:
            return
        params = event.params
        self.cdp.send(
            "Page.screencastFrameAck", {"sessionId": params["sessionId"]}, event.session_id
        )
        jpeg = base64.b64decode(params["data"]) if self.keep else b""
        width, height = self.page_size
        frame = browser_frame(
            profile=0, tab=0, seq=0, width=width, height=height, image_format=FORMAT_JPEG,
            key=False, page_width=width, page_height=height, image=jpeg,
        )  # fmt: skip
        self.frames.append((time.time(), frame))


async def floor_scenario(page: str, size: tuple[int, int, float], seconds: float) -> dict[str, Any]:
    from forge.workers.browser.chromium import ChromiumProcess, LaunchSettings
    from forge.workers.browser.gestures import to_cdp
    from forge.workers.browser.host import SCREENCAST, Viewport

    width, height, scale = size
    viewport = Viewport(width, height, scale)
    floor = CdpFloor()
    floor.page_size = viewport.css
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        launch = LaunchSettings(Path("/usr/bin/chromium"), Path(profile), ("about:blank",))
        chromium = await ChromiumProcess.launch(launch, floor.on_event)
        cdp = floor.cdp = chromium.connection
        try:
            target = await cdp.call("Target.createTarget", {"url": page, "newWindow": True})
            attach = {"targetId": target["targetId"], "flatten": True}
            session = (await cdp.call("Target.attachToTarget", attach))["sessionId"]
            await cdp.call("Page.enable", None, session)
            metrics = viewport.device_metrics()
            await cdp.call("Emulation.setDeviceMetricsOverride", metrics, session)
            touch = {"enabled": viewport.touch}
            await cdp.call("Emulation.setTouchEmulationEnabled", touch, session)
            await cdp.call("Page.startScreencast", SCREENCAST, session)
            await asyncio.sleep(1.5)

            async def tap() -> None:
                for down in (True, False):
                    for method, params in to_cdp(Press(48, 112, "left", down), viewport.touch):
                        cdp.send(method, params, session)

            cpu = {
                "chromium": [
                    psutil.Process(chromium.pid),
                    *psutil.Process(chromium.pid).children(recursive=True),
                ]
            }
            row = await measure(floor, [floor], tap, cpu, seconds)
        finally:
            await chromium.stop()
    _check_layout(row, size)
    return {"format": "floor", "viewport": f"{width}x{height}@{scale:g}", "viewers": 1,
            "host_cpu": 0.0, "supervisor_cpu": 0.0, **row}  # fmt: skip


def _p90(values: list[float]) -> float:
    if len(values) < 2:
        return float("nan")
    return statistics.quantiles(values, n=10)[-1]


async def main(seconds: float) -> None:
    page_server, page = serve_in_thread(page_of(PAGE.encode()))
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as scratch:
        root = Path(scratch)
        (root / "proj").mkdir()
        config = root / "forge.toml"
        config.write_text(f'[[projects]]\norg = "bench"\nname = "proj"\npath = "{root / "proj"}"\n')
        port = free_port()
        os.environ["XDG_STATE_HOME"] = str(root / "state")  # where the clients read the token
        env = dict(os.environ, XDG_RUNTIME_DIR=str(root / "run"))
        (root / "run").mkdir()
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-P", __file__, "--serve", str(config), "--port", str(port),
            env=env, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert process.stdout is not None
        await process.stdout.readline()
        supervisor = psutil.Process(process.pid)
        url = f"ws://127.0.0.1:{port}/socket"
        seq = [0]
        rows: list[dict[str, Any]] = []
        try:
            for size, counts in (((1280, 720, 1.0), (1, 4, 16)), ((1170, 2532, 3.0), (1,))):
                floor = await floor_scenario(page, size, seconds)
                rows.append(floor)
                print(_line(floor), flush=True)
                for viewers in counts:
                    for jpeg in (False, True):
                        row = await scenario(
                            url, page, supervisor, viewers=viewers, jpeg=jpeg, size=size,
                            seconds=seconds, seq=seq,
                        )  # fmt: skip
                        rows.append(row)
                        print(_line(row), flush=True)
        finally:
            process.kill()
            await process.wait()
            page_server.shutdown()
    print()
    print_ratios(rows)


def print_ratios(rows: list[dict[str, Any]]) -> None:
    def first(viewport: str, fmt: str) -> dict[str, Any]:
        return next(r for r in rows if r["viewport"] == viewport and r["format"] == fmt)

    for viewport in ("1280x720@1", "1170x2532@3"):
        for fmt in ("webp", "jpeg"):
            same = [r for r in rows if r["viewport"] == viewport and r["format"] == fmt]
            if len(same) > 1:
                extra = (same[-1]["supervisor_cpu"] - same[0]["supervisor_cpu"]) / (
                    same[-1]["viewers"] - same[0]["viewers"]
                )
                print(f"{viewport} {fmt}: supervisor CPU per added viewer {extra:.2f} % of a core")
    for viewport in ("1280x720@1", "1170x2532@3"):
        floor = first(viewport, "floor")
        for fmt in ("jpeg", "webp"):
            row = first(viewport, fmt)
            print(
                f"{viewport} 1 viewer, {fmt}/floor: fps x{row['fps'] / floor['fps']:.2f}, "
                f"paint->viewer x{row['paint_p50'] / floor['paint_p50']:.2f} "
                f"({row['paint_p50'] - floor['paint_p50']:+.0f} ms), input->visible "
                f"x{row['input_p50'] / floor['input_p50']:.2f} "
                f"({row['input_p50'] - floor['input_p50']:+.0f} ms)"
            )
        webp, jpeg = first(viewport, "webp"), first(viewport, "jpeg")
        print(
            f"{viewport} 1 viewer, jpeg/webp: fps x{jpeg['fps'] / webp['fps']:.2f}, paint->viewer "
            f"x{jpeg['paint_p50'] / webp['paint_p50']:.2f}, host CPU "
            f"x{jpeg['host_cpu'] / max(webp['host_cpu'], 0.01):.2f}"
        )


def _line(row: dict[str, Any]) -> str:
    return (
        f"{row['viewport']:>12} {row['format']:>4} viewers={row['viewers']:>2} "
        f"fps={row['fps']:5.1f} (min {row['fps_min']:5.1f}) "
        f"paint->viewer p50={row['paint_p50']:6.1f} p90={row['paint_p90']:6.1f} ms "
        f"input->visible p50={row['input_p50']:6.1f} p90={row['input_p90']:6.1f} ms "
        f"cpu host={row['host_cpu']:5.1f}% chromium={row['chromium_cpu']:5.1f}% "
        f"supervisor={row['supervisor_cpu']:5.1f}%"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="measuring window per row")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve, args.port))
    else:
        asyncio.run(main(args.seconds))
