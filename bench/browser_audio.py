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
  the sink is read, nothing is sent;
- relay floor: a bare websockets server (its own process, this script with --bare-relay:
  websockets' asyncio server, no forge code on the relay path, no compression as forge's) sends
  a frame of forge's kind-2 size (header + 20 ms of samples) every 20 ms, at absolute deadlines,
  to every connected viewer, while one is connected (as forge's host reads only while someone
  listens). Its CPU is read with no viewer, then 1, then 4 viewers in this process reading every
  frame: what any websockets fan-out of this stream costs, beside the supervisor's.
A relay's share at n viewers is its process's CPU over the same process's with no one listening
(forge: the floor window, where the viewer muted); per listening viewer is the 4-viewer share / 4,
the marginal viewer (4-viewer - 1-viewer) / 3.
CPU times come in clock ticks (10 ms): over a 10 s window every figure moves in steps of 0.1, so
the small ones (the bare relay's marginal viewer: a few ticks) want a longer `--seconds`.

    .venv/bin/python -P bench/browser_audio.py [--trials 12] [--seconds 10]

"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as serve_websockets
from websockets.exceptions import ConnectionClosed

from forge.access.token import read_token
from forge.client.auth import subprotocols
from forge.testing.pages import page_of, serve_in_thread
from forge.wire.binary import BROWSER_AUDIO_HEADER, browser_audio
from forge.workers.audio.protocol import CHANNELS, RATE, sink_name
from forge.workers.browser.sound import FRAME_BYTES, FRAME_MS, SILENT_PEAK, peak

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


async def bare_relay(port: int) -> None:
    """The relay floor: websockets' own server sends every connected viewer each frame, one
    awaited `send` per viewer, from a timer at absolute 20 ms deadlines that runs while anyone is
    connected. The samples are zeros: neither this server nor forge's compresses, so only their
    number matters."""
    viewers: set[ServerConnection] = set()
    ticker: asyncio.Task[None] | None = None

    async def tick() -> None:
        loop = asyncio.get_running_loop()
        deadline, seq, samples = loop.time(), 0, bytes(FRAME_BYTES)
        while viewers:
            seq += 1
            frame = browser_audio(
                profile=1, tab=1, seq=seq, rate=RATE, channels=CHANNELS, samples=samples
            )
            for viewer in list(viewers):
                with contextlib.suppress(ConnectionClosed):
                    await viewer.send(frame)
            deadline += FRAME_MS / 1000
            await asyncio.sleep(max(0.0, deadline - loop.time()))

    async def handle(viewer: ServerConnection) -> None:
        nonlocal ticker
        viewers.add(viewer)
        if ticker is None or ticker.done():
            ticker = asyncio.create_task(tick())
        await viewer.wait_closed()
        viewers.discard(viewer)

    async with serve_websockets(handle, "127.0.0.1", port, compression=None):
        print("ready", flush=True)
        await asyncio.Event().wait()


class Counter:
    """A bare relay's viewer: reads every frame and counts them."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.frames = 0
        self.heard = asyncio.Event()
        self.task = asyncio.ensure_future(self.read())

    async def read(self) -> None:
        async for _ in self.ws:
            self.frames += 1
            self.heard.set()

    async def close(self) -> None:
        await self.ws.close()
        self.task.cancel()


@dataclass(frozen=True, slots=True)
class Relay:
    """A relay's CPU (% of one core) over its process's own with no one listening."""

    one: float
    four: float

    @property
    def per_viewer(self) -> float:
        """Per listening viewer, as this script has always computed forge's: 4-viewer share / 4."""
        return self.four / 4

    @property
    def marginal(self) -> float:
        """What each viewer past the first adds: (4-viewer - 1-viewer) / 3."""
        return (self.four - self.one) / 3


def relay(none: float, one: float, four: float) -> Relay:
    """The relay's shares from its process's CPU with 0, 1 and 4 viewers listening."""
    return Relay(one=one - none, four=four - none)


def times(ours: float, theirs: float) -> str:
    """`ours / theirs` as "2.1x", or "n/a" when the floor measured nothing (or less)."""
    return f"{ours / theirs:.1f}x" if theirs > 0 else "n/a"


def relay_row(name: str, shares: Relay) -> str:
    return (
        f"  {name:<17} 1 viewer {shares.one:.2f}, 4 viewers {shares.four:.2f}; "
        f"per listening viewer {shares.per_viewer:.2f}, marginal {shares.marginal:.2f}"
    )


async def bare_windows(
    url: str, server: psutil.Process, seconds: float
) -> tuple[dict[int, float], dict[int, int]]:
    """The bare relay's % of a core with 0, 1 and 4 viewers, and the fewest frames any viewer
    read in each window."""
    cpu = {0: (await window({"bare": server}, seconds))["bare"]}
    frames: dict[int, int] = {}
    viewers: list[Counter] = []
    for count in (1, 4):
        while len(viewers) < count:
            viewers.append(Counter(await connect(url, max_size=None)))
        for viewer in viewers:
            await viewer.heard.wait()
        await asyncio.sleep(1.0)
        before = [viewer.frames for viewer in viewers]
        cpu[count] = (await window({"bare": server}, seconds))["bare"]
        frames[count] = min(viewer.frames - b for viewer, b in zip(viewers, before, strict=True))
    for viewer in viewers:
        await viewer.close()
    return cpu, frames


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


async def run(
    url: str,
    page: str,
    supervisor: psutil.Process,
    root: Path,
    bare: tuple[str, psutil.Process],
    args: Any,
) -> None:
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
    bare_cpu, bare_frames = await bare_windows(*bare, args.seconds)

    extra_host = forge_cpu["host"] - floor_cpu["host"]
    extra_supervisor = forge_cpu["supervisor"] - floor_cpu["supervisor"]
    ours_cpu = forge_cpu["daemon"] + extra_host + extra_supervisor
    floor_total = floor_cpu["daemon"] + floor_cpu["parec"]
    forge_shares = relay(floor_cpu["supervisor"], forge_cpu["supervisor"], fan_cpu["supervisor"])
    bare_shares = relay(bare_cpu[0], bare_cpu[1], bare_cpu[4])
    with_relay = floor_total + bare_shares.one
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
    print(
        f"  floor + bare relay (1 viewer): {floor_total:.1f} + {bare_shares.one:.1f} = "
        f"{with_relay:.1f}; forge {ours_cpu:.1f} is {times(ours_cpu, floor_total)} the floor, "
        f"{times(ours_cpu, with_relay)} floor + bare relay"
    )
    print("relay, % of one core over its process's own with no one listening (forge: muted):")
    print(relay_row("forge supervisor:", forge_shares))
    print(relay_row("bare websockets:", bare_shares))
    print(
        f"  forge / bare:     1 viewer {times(forge_shares.one, bare_shares.one)}, "
        f"4 viewers {times(forge_shares.four, bare_shares.four)}; "
        f"per listening viewer {times(forge_shares.per_viewer, bare_shares.per_viewer)}, "
        f"marginal {times(forge_shares.marginal, bare_shares.marginal)}"
    )
    print(
        f"  bare server in all: {bare_cpu[0]:.2f} with no viewer, {bare_cpu[1]:.2f} with 1, "
        f"{bare_cpu[4]:.2f} with 4; fewest frames a viewer read: {bare_frames[1]} with 1, "
        f"{bare_frames[4]} with 4 ({args.seconds * 1000 / FRAME_MS:.0f} at 50 a second)"
    )
    print(
        f"silent page, one viewer listening: {silent_frames} frames sent; daemon "
        f"{silent_cpu['daemon']:.1f}, host {silent_cpu['host']:.1f}, "
        f"supervisor {silent_cpu['supervisor']:.1f}"
    )
    print(f"  load average: {os.getloadavg()}")  # fmt: skip


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def helper(env: dict[str, str], *flags: str) -> asyncio.subprocess.Process:
    """This script again with `flags`, once it says it is ready."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-P", __file__, *flags, env=env, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    await process.stdout.readline()
    return process


async def main(args: Any) -> None:
    page_server, page = serve_in_thread(page_of(PAGE.encode()))
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as scratch:
        root = Path(scratch)
        (root / "proj").mkdir()
        (root / "run").mkdir(mode=0o700)
        config = root / "forge.toml"
        config.write_text(f'[[projects]]\norg = "bench"\nname = "proj"\npath = "{root / "proj"}"\n')
        port, bare_port = free_port(), free_port()
        env = dict(
            os.environ, XDG_STATE_HOME=str(root / "state"), XDG_RUNTIME_DIR=str(root / "run")
        )
        processes = [await helper(env, "--serve", str(config), "--port", str(port))]
        try:
            processes.append(await helper(env, "--bare-relay", str(bare_port)))
            await run(
                f"ws://127.0.0.1:{port}/socket",
                page,
                psutil.Process(processes[0].pid),
                root,
                (f"ws://127.0.0.1:{bare_port}/", psutil.Process(processes[1].pid)),
                args,
            )
        finally:
            for process in processes:
                process.kill()
                await process.wait()
            page_server.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--bare-relay", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.serve:
        asyncio.run(serve(arguments.serve, arguments.port))
    elif arguments.bare_relay:
        asyncio.run(bare_relay(arguments.bare_relay))
    else:
        asyncio.run(main(arguments))
