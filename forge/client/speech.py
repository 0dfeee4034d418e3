"""`forge say` and `forge dictate bench`: clients of the running supervisor's dictation area.

`say` asks the supervisor to speak a line on a seat's voice stream (`voice_say`): the clip goes
to the clients with voice on, nothing is played here. `bench` asks it to run the local corpus
through the models in use (`dictate_bench`) and prints the run it lands in `dictate_models`.
`render_bench` is a plain function of the reply. A bench takes tens of seconds and reports
nothing until it ends, so on a terminal `ticking` says it is running and counts the seconds.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Awaitable
from typing import Any, TextIO, TypeVar

from forge.client.connection import connect
from forge.wire.client import DictateBench, VoiceSay
from forge.wire.seats import Seat

SAID = 0
NOT_SAID = 1
"""Nobody had voice on for the seat, [tts] is off, or the engine failed: nothing was said."""
BENCH_RUNNING = "forge dictate bench: running the corpus through the models in use"
TICK_S = 1.0

T = TypeVar("T")


async def say(
    url: str, seat: Seat, text: str, voice: str | None, *, tls: ssl.SSLContext | None = None
) -> dict[str, Any]:
    """The `voice_say` reply body: `{ok, seq, seconds}` or `{ok: false, why}`."""
    async with connect(url, tls=tls) as connection:
        answer: dict[str, Any] = await connection.request(
            VoiceSay(key=seat, text=text, voice=voice)
        )
        return answer


async def bench(
    url: str, clips: list[str] | None = None, *, tls: ssl.SSLContext | None = None
) -> dict[str, Any]:
    async with connect(url, tls=tls) as connection:
        answer: dict[str, Any] = await connection.request(DictateBench(clips=clips))
        return answer


async def ticking(call: Awaitable[T], out: TextIO, said: str) -> T:
    """`call`'s result; meanwhile, when `out` is a terminal, `said` and the seconds so far on
    one line, cleared once the result is in (a pipe or a file gets nothing: it wants the result)."""
    task = asyncio.ensure_future(call)
    if not out.isatty():
        return await task
    started = time.monotonic()
    try:
        while not task.done():
            out.write(f"\r{said}… {time.monotonic() - started:.0f} s")
            out.flush()
            await asyncio.wait({task}, timeout=TICK_S)
    finally:
        task.cancel()  # a no-op once it is done; Ctrl-C here must not leave it running
        out.write("\r\x1b[K")
        out.flush()
    return task.result()


def render_bench(answer: dict[str, Any]) -> str:
    if not answer.get("ok"):
        return f"bench failed: {answer.get('why')}"
    run = answer["run"]
    lines = [
        f"dictation: {run['model']}, {run['clips']} clips, {run['audio_s']} s of audio "
        f"(corpus {run['corpus_digest']}){_load(run)}",
        f"  WER {run['wer']:.1%} streamed in real time, {run['floor_wer']:.1%} whole-clip floor",
        f"  RTF {run['rtf']}  end of take p50 {run['end_of_take_p50_s']} s{_ratio(run)}, "
        f"p95 {run['end_of_take_p95_s']} s  {_first_partial(run['first_partial_s'])}  "
        f"peak RSS +{run['peak_rss_bytes'] // 2**20} MiB",
    ]
    if run.get("long_wer") is not None:
        lines.append(
            f"  long takes: WER {run['long_wer']:.1%} streamed, "
            f"{run['long_form_wer']:.1%} faster-whisper long-form on the same audio"
            f"{_long_ratios(run)}"
        )
    for row in run["rows"]:
        lines.append(f"  {row['name']:<12} {row['streamed']!r}")
    speaking = answer.get("speaking")
    if speaking:
        lines.append(
            f"speaking: {speaking['model']}, {speaking['clips']} lines, round-trip WER "
            f"{speaking['round_trip_wer']:.1%}, first audio p50 "
            f"{speaking['first_audio_ms_p50']} ms, RTF {speaking['rtf']}"
        )
    return "\n".join(lines)


def _load(run: dict[str, Any]) -> str:
    """`, load average 1.2 -> 1.3` where the bench measured it."""
    before, after = run.get("load_before"), run.get("load_after")
    return "" if before is None or after is None else f", load average {before} -> {after}"


def _ratio(run: dict[str, Any]) -> str:
    """` (1.06x the floor's decode of the last read)` where the bench measured it."""
    ratio = run.get("end_ratio_p50")
    return "" if ratio is None else f" ({ratio}x the floor's decode of the last read)"


def _long_ratios(run: dict[str, Any]) -> str:
    """`; end of take 1.1x, 1.3x the floor's decode of the last read` where measured."""
    ratios = run.get("long_end_ratios") or []
    if not ratios:
        return ""
    return f"; end of take {', '.join(f'{r}x' for r in ratios)} the floor's decode of the last read"


def _first_partial(seconds: float | None) -> str:
    """None when no clip gave a partial before its end (short clips)."""
    return "no partial before a take's end" if seconds is None else f"first partial {seconds} s"
