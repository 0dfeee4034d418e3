"""Browser audio benchmark: page-start->viewer latency and CPU per playing profile, beside the
floor of `parec --latency-msec=10` reading the same sink in the same run.

A real supervisor (its own process, this script with --serve) hosts the browser verbs and starts
the sound server; the page holds one running AudioContext and a click turns a 440 Hz tone on or
off, stamping `Date.now()` into its title at the switch. Each trial turns the tone on while a
websockets viewer listens through forge and `parec` reads the profile's sink monitor directly:
the latency of each is its first loud 20 ms block's arrival minus the page's stamp (one clock).

CPU is read over windows of the same run, each `--seconds` long, the tone playing throughout:
- forge: one viewer hears the tab (parec not running);
- floor: the viewer turned its sound off (`browser_audio{on: false}`: the host reads nothing),
  `parec` reads the sink instead. The floor is daemon + parec; forge's is daemon + the host's
  and the supervisor's extra over the floor window (the reader, numbering, IPC, the relay);
- fan-out: four viewers hear the tab, for the supervisor's share per listening viewer;
- silent: the tone off (the AudioContext still running, writing zeros), one viewer listening:
  the sink is read, nothing is sent.

    .venv/bin/python -P bench/browser_audio.py [--trials 12] [--seconds 10]

"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from websockets.asyncio.client import ClientConnection, connect

from forge.access.token import read_token
from forge.client.auth import subprotocols
from forge.testing.pages import page_of, serve_in_thread
from forge.wire.binary import BROWSER_AUDIO_HEADER
from forge.workers.audio.protocol import sink_name
from forge.workers.browser.sound import FRAME_BYTES, SILENT_PEAK, peak

SEAT = {"org": "bench", "project": "proj", "label": "lead"}

PAGE = """<!doctype html><body style=margin:0><button id=b style="position:absolute;left:0;
top:0;width:400px;height:300px;border:0;background:#c00"></button><script>
let ctx, level, on = false;
document.getElementById('b').onclick = () => {
  if (!ctx) {
    ctx = new AudioContext({sampleRate: 48000});
    const tone = ctx.createOscillator(); tone.frequency.value = 440;
    level = ctx.createGain(); level.gain.value = 0;
    tone.connect(level).connect(ctx.destination); tone.start();
  }
  on = !on;
  level.gain.setValueAtTime(on ? 0.3 : 0, ctx.currentTime);
  document.title = (on ? 'on:' : 'off:') + Date.now();
};
</script>"""


async def serve(config: Path, port: int) -> None:
    """The supervisor process: the browser verbs (and so the sound server), until killed."""
    from forge.config import load_config
    from forge.ipc.manager import WorkerManager
    from forge.supervisor import browsers
    from forge.supervisor.core import Supervisor
    from forge.supervisor.server import SocketServer

    supervisor = Supervisor(load_config(config, overrides={"server.port": port}))
    async with WorkerManager() as manager:
        browsers.install(supervisor, manager)
        server = SocketServer(supervisor)
        await server.start()
        print("ready", flush=True)
        await asyncio.Event().wait()


class Listener:
    """A viewer: every reply, every `browser_tabs` push, and each kind-2 frame's arrival time
    and loudness."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.replies: dict[str, Any] = {}
        self.titles: list[str] = []
        self.sound: list[tuple[float, int]] = []
        self.asks = 0
        self.changed = asyncio.Event()
        self.task = asyncio.ensure_future(self.read())

    async def read(self) -> None:
        async for message in self.ws:
            if isinstance(message, str):
                decoded = json.loads(message)
                if decoded["kind"] == "reply":
                    self.replies[decoded["reply_to"]] = decoded["body"]
                elif decoded["kind"] == "browser_tabs":
                    self.titles.extend(row["title"] for row in decoded["rows"])
                self.changed.set()
            elif message[0] == 2:
                self.sound.append((time.time(), peak(message[BROWSER_AUDIO_HEADER.size :])))

    async def ask(self, message: dict[str, Any]) -> Any:
        self.asks += 1
        key = f"b{self.asks}"
        await self.ws.send(json.dumps({**message, "reply_to": key}))
        while key not in self.replies:
            self.changed.clear()
            await self.changed.wait()
        return self.replies.pop(key)

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))

    async def stamp(self, prefix: str, after: int) -> int:
        """The page's next `prefix` stamp past `after` (titles are re-read once a second)."""
        while True:
            stamps = [int(t[len(prefix) :]) for t in self.titles if t.startswith(prefix)]
            fresh = [s for s in stamps if s > after]
            if fresh:
                return fresh[0]
            self.changed.clear()
            await self.changed.wait()

    async def close(self) -> None:
        await self.ws.close()
        self.task.cancel()


class Parec:
    """The floor: `parec --latency-msec=10` on the sink's monitor, read 20 ms at a time in a
    thread; the arrival time and loudness of each block."""

    def __init__(self, server: str, sink: str) -> None:
        self.process = subprocess.Popen(
            ["parec", "--latency-msec=10", "--rate=48000", "--channels=2", "--format=s16le",
             "-d", f"{sink}.monitor"],
            env={**os.environ, "PULSE_SERVER": server}, stdout=subprocess.PIPE,
        )  # fmt: skip
        self.blocks: list[tuple[float, int]] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        while block := self.process.stdout.read(FRAME_BYTES):
            self.blocks.append((time.time(), peak(block)))

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def first_loud(arrivals: list[tuple[float, int]], after: float) -> float | None:
    return next((at for at, level in arrivals if at >= after and level > SILENT_PEAK), None)


def cpu_seconds(process: psutil.Process) -> float:
    try:
        times = process.cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return float(times.user + times.system)


async def window(processes: dict[str, psutil.Process], seconds: float) -> dict[str, float]:
    """% of one core each process used over `seconds`."""
    before = {name: cpu_seconds(p) for name, p in processes.items()}
    started = time.monotonic()
    await asyncio.sleep(seconds)
    elapsed = time.monotonic() - started
    return {n: (cpu_seconds(p) - before[n]) / elapsed * 100 for n, p in processes.items()}


async def click(lead: Listener, seq: list[int]) -> None:
    for down in (True, False):
        seq[0] += 1
        press = {"press": {"x": 100, "y": 100, "button": "left", "down": down}}
        await lead.send({"kind": "browser_input", "seq": seq[0], "event": press})


def _pct(values: list[float], q: int) -> float:
    if not values:
        return float("nan")
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


async def run(url: str, page: str, supervisor: psutil.Process, root: Path, args: Any) -> None:
    seq = [0]
    offer = subprotocols(read_token(root / "state" / "forge" / "token"))
    lead = Listener(await connect(url, max_size=None, subprotocols=offer))
    tab = (await lead.ask({"kind": "browser_open", "seat": SEAT, "url": page}))["tab"]
    await lead.ask({"kind": "browser_view", "seat": SEAT, "tab": tab})
    await lead.ask({"kind": "browser_tabs", "seat": SEAT})
    await lead.send({"kind": "browser_control", "take": True})
    workers = {p.environ().get("FORGE_WORKER_KIND"): p for p in supervisor.children()}
    host, sound = workers["browser"], workers["audio"]
    (daemon,) = [p for p in sound.children() if p.name() == "pulseaudio"]
    server = f"unix:{root / 'run' / 'forge' / 'sound' / 'native'}"
    sink = sink_name("bench/default")
    await asyncio.sleep(1.0)

    parec = Parec(server, sink)
    forge_ms, floor_ms = [], []
    stamp = 0
    for trial in range(args.trials + 1):
        await click(lead, seq)  # on
        stamp = await lead.stamp("on:", stamp)
        await asyncio.sleep(1.0)
        await click(lead, seq)  # off
        off = await lead.stamp("off:", stamp)
        await asyncio.sleep(1.0)
        ours, floor = first_loud(lead.sound, stamp / 1000), first_loud(parec.blocks, stamp / 1000)
        if trial == 0 or ours is None or floor is None:
            continue  # the first sound also starts Chromium's audio service: not a trial
        forge_ms.append((ours - stamp / 1000) * 1000)
        floor_ms.append((floor - stamp / 1000) * 1000)
        stamp = off

    await click(lead, seq)  # on for the CPU windows
    processes = {"daemon": daemon, "host": host, "supervisor": supervisor}
    await asyncio.sleep(1.0)
    parec.stop()
    forge_cpu = await window(processes, args.seconds)
    await lead.ask({"kind": "browser_audio", "on": False})
    parec = Parec(server, sink)
    await asyncio.sleep(1.0)
    floor_cpu = await window({**processes, "parec": psutil.Process(parec.process.pid)},
                             args.seconds)  # fmt: skip
    parec.stop()
    await lead.ask({"kind": "browser_audio", "on": True})
    others = [Listener(await connect(url, max_size=None, subprotocols=offer)) for _ in range(3)]
    for other in others:
        await other.ask({"kind": "browser_view", "seat": SEAT, "tab": tab})
    await asyncio.sleep(1.0)
    fan_cpu = await window(processes, args.seconds)
    for other in others:
        await other.close()
    await click(lead, seq)  # off: silence
    await asyncio.sleep(1.0)
    sent = len(lead.sound)
    silent_cpu = await window(processes, args.seconds)
    silent_frames = len(lead.sound) - sent
    await lead.close()

    extra_host = forge_cpu["host"] - floor_cpu["host"]
    extra_supervisor = forge_cpu["supervisor"] - floor_cpu["supervisor"]
    ours_cpu = forge_cpu["daemon"] + extra_host + extra_supervisor
    floor_total = floor_cpu["daemon"] + floor_cpu["parec"]
    per_viewer = (fan_cpu["supervisor"] - floor_cpu["supervisor"]) / 4
    print(f"page start -> first loud 20 ms, {len(forge_ms)} trials:")
    print(
        f"  forge (viewer)  p50 {statistics.median(forge_ms):6.1f} ms  "
        f"p90 {_pct(forge_ms, 90):6.1f} ms  max {max(forge_ms):6.1f} ms"
    )
    print(
        f"  floor (parec)   p50 {statistics.median(floor_ms):6.1f} ms  "
        f"p90 {_pct(floor_ms, 90):6.1f} ms  max {max(floor_ms):6.1f} ms"
    )
    print("CPU, % of one core, one profile playing:")
    print(
        f"  forge: daemon {forge_cpu['daemon']:.1f} + host extra {extra_host:.1f} "
        f"+ supervisor extra {extra_supervisor:.1f} = {ours_cpu:.1f} "
        f"(host {forge_cpu['host']:.1f}, supervisor {forge_cpu['supervisor']:.1f} in all)"
    )
    print(
        f"  floor: daemon {floor_cpu['daemon']:.1f} + parec {floor_cpu['parec']:.1f} "
        f"= {floor_total:.1f} (host {floor_cpu['host']:.1f}, "
        f"supervisor {floor_cpu['supervisor']:.1f} while muted)"
    )
    print(f"  supervisor per listening viewer (4 viewers): {per_viewer:.2f}")
    print(
        f"silent page, one viewer listening: {silent_frames} frames sent; daemon "
        f"{silent_cpu['daemon']:.1f}, host {silent_cpu['host']:.1f}, "
        f"supervisor {silent_cpu['supervisor']:.1f}"
    )
    print(f"  load average: {os.getloadavg()}")  # fmt: skip


async def main(args: Any) -> None:
    page_server, page = serve_in_thread(page_of(PAGE.encode()))
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as scratch:
        root = Path(scratch)
        (root / "proj").mkdir()
        (root / "run").mkdir(mode=0o700)
        config = root / "forge.toml"
        config.write_text(f'[[projects]]\norg = "bench"\nname = "proj"\npath = "{root / "proj"}"\n')
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        env = dict(
            os.environ, XDG_STATE_HOME=str(root / "state"), XDG_RUNTIME_DIR=str(root / "run")
        )
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-P", __file__, "--serve", str(config), "--port", str(port),
            env=env, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert process.stdout is not None
        await process.stdout.readline()
        try:
            await run(
                f"ws://127.0.0.1:{port}/socket", page, psutil.Process(process.pid), root, args
            )
        finally:
            process.kill()
            await process.wait()
            page_server.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.serve:
        asyncio.run(serve(arguments.serve, arguments.port))
    else:
        asyncio.run(main(arguments))
