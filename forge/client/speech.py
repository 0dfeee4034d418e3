"""`forge say` and `forge dictate bench`: clients of the running supervisor's dictation area.

`say` asks the supervisor to speak a line on a seat's voice stream (`voice_say`): the clip goes
to the clients with voice on, nothing is played here. `bench` asks it to run the local corpus
through the models in use (`dictate_bench`) and prints the run it lands in `dictate_models`.
`render_bench` is a plain function of the reply.
"""

from __future__ import annotations

import ssl
from typing import Any

from forge.client.connection import connect
from forge.wire.client import DictateBench, VoiceSay
from forge.wire.seats import Seat

SAID = 0
NOT_SAID = 1
"""Nobody had voice on for the seat, [tts] is off, or the engine failed: nothing was said."""


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


def render_bench(answer: dict[str, Any]) -> str:
    if not answer.get("ok"):
        return f"bench failed: {answer.get('why')}"
    run = answer["run"]
    lines = [
        f"dictation: {run['model']}, {run['clips']} clips, {run['audio_s']} s of audio "
        f"(corpus {run['corpus_digest']}), load average {run.get('load_before')} -> "
        f"{run.get('load_after')}",
        f"  WER {run['wer']:.1%} streamed in real time, {run['floor_wer']:.1%} whole-clip floor",
        f"  RTF {run['rtf']}  end of take p50 {run['end_of_take_p50_s']} s "
        f"({run.get('end_ratio_p50')}x the floor's decode), p95 {run['end_of_take_p95_s']} s  "
        f"first partial {run['first_partial_s']} s  "
        f"peak RSS +{run['peak_rss_bytes'] // 2**20} MiB",
    ]
    if run.get("long_wer") is not None:
        lines.append(
            f"  long takes: WER {run['long_wer']:.1%} streamed, "
            f"{run['long_form_wer']:.1%} faster-whisper long-form on the same audio"
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
