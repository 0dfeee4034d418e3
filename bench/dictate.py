"""Dictation benchmark: takes streamed through a real socket beside faster-whisper on the whole WAV.

    .venv/bin/python -P bench/dictate.py [--quick] [--no-long]

A supervisor serving only dictation and voice runs in a child process (this script with
`--serve PORT`: the same `forge.testing.dictation` rig the tests use, a real dictate worker under
it), so its CPU is its own. The client (this process) streams the committed corpus as kind-0
frames at real-time pace, one take at a time, then two takes at once, and reports:

- the floor: the same engine (int8, the packaged tiny.en) called in this process on each whole
  WAV right after its take (the machine as loaded as it was for the take), its WER and RTF;
- streamed WER beside the floor's on the clips forge was never tuned on (`unseen`: 24 sentences
  in eight voice and noise conditions; `paused`: six sentences paused 1-5 s mid-way), per
  condition; end of take (dictate_stop sent -> dictate_ended read) p50/p95 and its ratio to the
  floor's decode of the same clip (a short clip's voice starts at its start, so the take's last
  read is of the whole clip, to its end, as the floor's; `forge dictate bench` times the floor on
  the last read's own span);
- the long takes (`long-a`, `long-b`, 3.3 minutes each) streamed in real time beside
  faster-whisper's own long-form mode on the same audio (`Engine.long_form`);
- first partial (first frame sent -> first dictate_partial);
- CPU seconds per audio second of the supervisor and of the worker, with 1 and 2 takes at once
  (the `local` clips);
- TTS first audio (espeak-ng, the adapter in this process) and `voice_say` -> `voice_audio`
  through the socket;
- the socket floor: a bare websockets server (`--bare`) fed the same frames at the same pace,
  answering one small JSON message per five frames, for the supervisor's CPU to stand beside.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psutil
from websockets.asyncio.client import ClientConnection, connect

from forge.client.auth import subprotocols
from forge.wire.binary import dictation as kind0
from forge.workers.dictate import corpus, wer
from forge.workers.dictate.audio import FRAME_BYTES, FRAME_MS, seconds
from forge.workers.dictate.engine import Engine
from forge.workers.dictate.models import choose
from forge.workers.dictate.tts import Speaker

SEAT = {"org": "acme", "project": "proj", "label": "bench"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def serve(port: int, announce: Path) -> None:
    """The child: serve until terminated; write the worker's pid to `announce` once it is ready."""
    from forge.testing.dictation import serve_dictation

    with tempfile.TemporaryDirectory() as root:
        async with serve_dictation(Path(root), Path(root), port) as served:
            while served.service.page.model.state not in ("ready", "failed"):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
            worker = served.service.handle
            ready = json.dumps({"worker": worker.pid if worker else None})
            await asyncio.to_thread(announce.write_text, ready)
            await asyncio.Event().wait()


async def serve_bare(port: int, announce: Path) -> None:
    """The socket floor: a bare websockets server that reads the take's frames and sends one small
    JSON message per five of them (the levels), nothing else - no supervisor, no worker."""
    from websockets.asyncio.server import ServerConnection
    from websockets.asyncio.server import serve as ws_serve

    async def handler(ws: ServerConnection) -> None:
        await ws.send('{"kind":"greeting"}')
        await ws.send('{"kind":"settings"}')
        count = 0
        async for message in ws:
            count += 1
            if isinstance(message, bytes) and count % 5 == 0:
                await ws.send(json.dumps({"kind": "dictate_level", "key": SEAT, "rms": 0.1}))
            elif isinstance(message, str) and "dictate_stop" in message:
                await ws.send(json.dumps({"kind": "dictate_ended", "raw": ""}))

    async with ws_serve(handler, "127.0.0.1", port, max_size=None):
        await asyncio.to_thread(announce.write_text, json.dumps({"worker": os.getpid()}))
        await asyncio.Event().wait()


def read_announcement(path: Path) -> int | None:
    text = path.read_text() if path.exists() else ""
    return json.loads(text)["worker"] if text else None


async def announced(path: Path) -> int:
    while (pid := await asyncio.to_thread(read_announcement, path)) is None:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    return pid


class Take:
    """One client's take: when it began, its first partial, and its end."""

    def __init__(self, ws: ClientConnection, seat: dict[str, str]) -> None:
        self.ws, self.seat = ws, seat
        self.first_partial: float | None = None
        self.stop_sent = 0.0
        self.ended: dict[str, Any] | None = None
        self.ended_at = 0.0

    async def run(self, pcm: bytes, pace: float) -> None:
        await self.ws.send(json.dumps({"kind": "dictate_stream", "key": self.seat}))
        reader = asyncio.ensure_future(self._read())
        started = time.perf_counter()
        for number, at in enumerate(range(0, len(pcm), FRAME_BYTES)):
            await self.ws.send(kind0(pcm[at : at + FRAME_BYTES]))
            due = started + (number + 1) * FRAME_MS / 1000 / pace
            await asyncio.sleep(max(due - time.perf_counter(), 0.0))
        self.stop_sent = time.perf_counter()
        await self.ws.send(json.dumps({"kind": "dictate_stop", "key": self.seat}))
        await reader
        if self.first_partial is not None:
            self.first_partial -= started

    async def _read(self) -> None:
        while True:
            message = json.loads(await self.ws.recv())
            if message["kind"] == "dictate_partial" and self.first_partial is None:
                self.first_partial = time.perf_counter()
            if message["kind"] in ("dictate_ended", "dictate_failed"):
                self.ended, self.ended_at = message, time.perf_counter()
                return

    @property
    def end_s(self) -> float:
        return self.ended_at - self.stop_sent


async def client(url: str) -> ClientConnection:
    ws = await connect(url, max_size=None, subprotocols=subprotocols())
    await ws.recv()
    await ws.recv()
    return ws


async def socket_floor(clips: list[corpus.Clip]) -> float:
    """CPU seconds per audio second of a bare websockets server fed the same frames."""
    port = free_port()
    announce = Path(tempfile.mkdtemp()) / "ready.json"
    argv = [sys.executable, "-P", __file__, "--bare", str(port), "--announce", str(announce)]
    quiet = subprocess.DEVNULL
    server = subprocess.Popen(argv, stdout=quiet, stderr=quiet)  # noqa: ASYNC220
    try:
        await announced(announce)
        process = psutil.Process(server.pid)
        ws = await client(f"ws://127.0.0.1:{port}/socket")
        base, audio = cpu(process), 0.0
        for clip in clips:
            await Take(ws, SEAT).run(clip.samples(), pace=1.0)
            audio += seconds(clip.samples())
        used = cpu(process) - base
        await ws.close()
    finally:
        server.terminate()
        server.wait()
    return used / audio


def cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def total(scores: Iterable[wer.Score]) -> wer.Score:
    return sum(scores, wer.Score(0, 0))


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


QUICK = ("u01-0", "u02-1", "u05-4", "u06-5", "p1", "p4")


async def main(quick: bool, long: bool) -> None:
    everything = corpus.load()
    clips = [c for c in everything if c.group in ("unseen", "paused")]
    if quick:
        clips = [c for c in clips if c.name in QUICK]
    quiet = [c for c in everything if c.name in ("silence", "noise")]
    longs = [c for c in everything if c.group == "long"] if long and not quick else []
    local = [c for c in everything if c.group == "local" and c.text]
    if quick:
        local = local[:2]
    load_before = os.getloadavg()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    machine = platform.processor() or platform.machine()
    print(f"# {when}, {machine}, {os.cpu_count()} cores, load average {load_before[0]:.1f}")

    engine = Engine(choose(None), cpu_threads=2)
    floor: dict[str, tuple[str, float]] = {}

    def decode_floor(clip: corpus.Clip) -> None:
        """The floor of `clip`, decoded here right after its take (the same load on the machine)."""
        started = time.perf_counter()
        text = engine.long_form(clip.samples()) if clip.group == "long" else None
        if text is None:
            text = engine.hear(clip.samples()).text
        floor[clip.name] = (text, time.perf_counter() - started)

    port = free_port()
    announce = Path(tempfile.mkdtemp()) / "ready.json"
    argv = [sys.executable, "-P", __file__, "--serve", str(port), "--announce", str(announce)]
    quiet_out = subprocess.DEVNULL
    server = subprocess.Popen(argv, stdout=quiet_out, stderr=quiet_out)  # noqa: ASYNC220
    try:
        worker_pid = await announced(announce)
        supervisor, worker = psutil.Process(server.pid), psutil.Process(worker_pid)
        url = f"ws://127.0.0.1:{port}/socket"
        one = await client(url)
        takes: dict[str, Take] = {}
        for clip in clips + quiet + longs:
            take = Take(one, SEAT)
            await take.run(clip.samples(), pace=1.0)
            takes[clip.name] = take
            if clip.text:
                decode_floor(clip)

        base = (cpu(supervisor), cpu(worker))
        audio = 0.0
        for clip in local:
            await Take(one, SEAT).run(clip.samples(), pace=1.0)
            audio += seconds(clip.samples())
        single = ((cpu(supervisor) - base[0]) / audio, (cpu(worker) - base[1]) / audio)

        two = await client(url)
        other = dict(SEAT, label="bench-2")
        base = (cpu(supervisor), cpu(worker))
        audio = 0.0
        pairs = list(zip(local[0::2], local[1::2], strict=False))
        for left, right in pairs:
            await asyncio.gather(
                Take(one, SEAT).run(left.samples(), 1.0), Take(two, other).run(right.samples(), 1.0)
            )
            audio += max(seconds(left.samples()), seconds(right.samples()))
        double = ((cpu(supervisor) - base[0]) / audio, (cpu(worker) - base[1]) / audio)

        await one.send(json.dumps({"kind": "voice_mode", "key": SEAT, "on": True}))
        says = []
        for line in ("The build is green.", "Three tests failed in the parser."):
            sent = time.perf_counter()
            await one.send(json.dumps({"kind": "voice_say", "key": SEAT, "text": line}))
            while json.loads(await one.recv())["kind"] != "voice_audio":
                pass
            says.append(time.perf_counter() - sent)
        await one.close()
        await two.close()
    finally:
        server.terminate()
        server.wait()

    floor_cpu = await socket_floor(local)
    speaker = Speaker()
    firsts = [(await speaker.render(clip.text)).first_audio_s for clip in local]

    def heard(clip: corpus.Clip) -> str:
        return str((takes[clip.name].ended or {}).get("raw", ""))

    print("\n| voice | condition | clips | words | floor WER | streamed WER |")
    print("|---|---|---|---|---|---|")
    for voice, condition in dict.fromkeys((c.voice, c.condition) for c in clips):
        chosen = [c for c in clips if (c.voice, c.condition) == (voice, condition)]
        streamed = total(wer.score(c.text, heard(c)) for c in chosen)
        floored = total(wer.score(c.text, floor[c.name][0]) for c in chosen)
        print(
            f"| {voice} | {condition} | {len(chosen)} | {streamed.words} | {floored.rate:.1%} | "
            f"{streamed.rate:.1%} |"
        )
    print()
    for group in ("unseen", "paused"):
        chosen = [c for c in clips if c.group == group]
        if chosen:
            streamed = total(wer.score(c.text, heard(c)) for c in chosen)
            floored = total(wer.score(c.text, floor[c.name][0]) for c in chosen)
            print(
                f"- {group}: streamed WER {streamed.rate:.2%} beside the floor's "
                f"{floored.rate:.2%} ({streamed.words} words, {len(chosen)} clips)"
            )
    streamed = total(wer.score(c.text, heard(c)) for c in clips)
    floored = total(wer.score(c.text, floor[c.name][0]) for c in clips)
    print(f"- all: streamed WER {streamed.rate:.2%} beside the floor's {floored.rate:.2%}")
    differ = [c for c in clips if wer.words(heard(c)) != wer.words(floor[c.name][0])]
    for clip in differ:
        print(f"  - {clip.name}: floor {floor[clip.name][0]!r}, streamed {heard(clip)!r}")
    landed = {c.name: heard(c) for c in quiet}
    print(f"- silence and noise landed: {landed}")
    for clip in longs:
        take = takes[clip.name]
        text, decode_s = floor[clip.name]
        print(
            f"- {clip.name} ({seconds(clip.samples()):.0f} s, {len(wer.words(clip.text))} words): "
            f"streamed WER {wer.score(clip.text, heard(clip)).rate:.2%} beside long-form "
            f"{wer.score(clip.text, text).rate:.2%} (long-form decode {decode_s:.1f} s); end of "
            f"take {take.end_s:.2f} s"
        )
    audio_total = sum(seconds(c.samples()) for c in clips)
    floor_total = sum(floor[c.name][1] for c in clips)
    ends = [takes[c.name].end_s for c in clips]
    ratios = [takes[c.name].end_s / floor[c.name][1] for c in clips]
    partials = [takes[c.name].first_partial for c in clips]
    firsts_seen = [p for p in partials if p is not None]
    rtf = floor_total / audio_total
    print(f"- floor RTF {rtf:.2f} ({floor_total:.1f} s decoding {audio_total:.1f} s)")
    print(
        f"- end of take p50 {statistics.median(ends):.2f} s, p95 {pct(ends, 0.95):.2f} s; "
        f"over the floor's decode of the same clip p50 {statistics.median(ratios):.2f}, "
        f"p95 {pct(ratios, 0.95):.2f}"
    )
    if firsts_seen:
        had = f"{len(firsts_seen)}/{len(clips)} takes had one"
        print(f"- first partial p50 {statistics.median(firsts_seen):.2f} s ({had})")
    print(f"- CPU s per audio s, 1 take: supervisor {single[0]:.4f}, worker {single[1]:.2f}")
    print(f"- CPU s per audio s, 2 at once: supervisor {double[0]:.4f}, worker {double[1]:.2f}")
    print(
        f"- CPU s per audio s, 1 take, bare websockets server (the socket floor): {floor_cpu:.4f}"
    )
    first_ms = statistics.median(firsts) * 1000
    print(f"- TTS first audio (espeak-ng) p50 {first_ms:.0f} ms, max {max(firsts) * 1000:.0f} ms")
    said = ", ".join(f"{s * 1000:.0f} ms" for s in says)
    print(f"- voice_say -> voice_audio through the socket: {said}")
    load_after = os.getloadavg()
    print(f"- load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="six clips, no long take")
    parser.add_argument("--no-long", action="store_true", help="leave the long takes out")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--announce", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--bare", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.bare:
        asyncio.run(serve_bare(arguments.bare, arguments.announce))
    elif arguments.serve:
        os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
        asyncio.run(serve(arguments.serve, arguments.announce))
    else:
        # The served supervisor's state (its socket token, the bench results) and sockets live in
        # a directory of the run's own, which the client here reads the token from too.
        scratch = Path(tempfile.mkdtemp())
        for name in ("state", "runtime"):
            (scratch / name).mkdir(mode=0o700)
        os.environ["XDG_STATE_HOME"] = str(scratch / "state")
        os.environ["XDG_RUNTIME_DIR"] = str(scratch / "runtime")
        asyncio.run(main(arguments.quick, not arguments.no_long))
