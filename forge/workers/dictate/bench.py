"""`forge dictate bench`, inside the worker: the committed corpus streamed through takes in real
time, beside the floor on each whole clip, on the worker's own lane.

Each clip is pushed into a take 20 ms at a time at the pace it was spoken (partials, reads ahead
and windows run as they would for a phone), then the take is finished: the end of the take is
from its last frame to its words, and it is measured against the floor's decode of the audio the
take's last read covered (the same call on the same span, timed on the same lane right after).
The floor's words are the same engine on the whole clip in one call; a long take's are
faster-whisper's own long-form mode. The default set (`DEFAULT`) is the
clips forge was never tuned on (`unseen`, `paused`), silence and noise (nothing may land) and
one long take; `--clip` names others (`long-b`, the `local` clips).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import resource
import statistics
import time
from typing import Any

import psutil

from forge.workers.dictate import corpus, wer
from forge.workers.dictate.audio import (
    FRAME_BYTES,
    FRAME_MS,
    resample_to_rate,
    seconds,
)
from forge.workers.dictate.engine import Engine
from forge.workers.dictate.lane import Lane
from forge.workers.dictate.protocol import BenchRun, ClipResult, SpeakingRun
from forge.workers.dictate.shaping import Axes
from forge.workers.dictate.take import Take
from forge.workers.dictate.tts import Speaker
from forge.workers.dictate.windows import Kind, Read

BYTES_PER_MS = FRAME_BYTES // FRAME_MS

DEFAULT_GROUPS = ("unseen", "paused")
DEFAULT_NAMES = ("silence", "noise", "long-a")


def chosen(names: list[str]) -> list[corpus.Clip]:
    """The clips named, or the default set; [] when a name matches none."""
    clips = corpus.load()
    if names:
        return [clip for clip in clips if clip.name in names]
    return [c for c in clips if c.group in DEFAULT_GROUPS or c.name in DEFAULT_NAMES]


async def dictation(engine: Engine, lane: Lane, clips: list[corpus.Clip]) -> BenchRun:
    load_before = os.getloadavg()[0]
    baseline = psutil.Process().memory_info().rss
    digest = hashlib.sha256()
    rows: list[ClipResult] = []
    first_partials: list[float] = []
    for number, clip in enumerate(clips):
        pcm = clip.samples()
        digest.update(clip.text.encode() + pcm)
        floor_call = Engine.long_form if clip.group == "long" else _whole
        floor, floor_s = await lane.run(functools.partial(floor_call, engine, pcm))
        take = Take(-1 - number, Axes("verbatim"), engine, lane, _quiet)
        await _stream(take, pcm)
        ending = time.perf_counter()
        finished = await take.finish(0)
        end_s = time.perf_counter() - ending
        if take.first_partial_s is not None:
            first_partials.append(take.first_partial_s)
        last_floor_s = await _last_read_floor(engine, lane, take.last_read, pcm)
        rows.append(
            ClipResult(
                name=clip.name,
                voice=clip.voice,
                said=clip.text,
                floor=floor,
                streamed=finished.raw,
                audio_s=seconds(pcm),
                floor_s=round(floor_s, 3),
                end_of_take_s=round(end_s, 3),
                last_read_floor_s=None if last_floor_s is None else round(last_floor_s, 3),
                condition=clip.condition,
                group=clip.group,
            )
        )
    short = [row for row in rows if row.group != "long"] or rows
    long = [row for row in rows if row.group == "long"]
    ends = sorted(row.end_of_take_s for row in short)
    audio_s = sum(row.audio_s for row in short)
    ratios = [_end_ratio(row) for row in short if row.said and row.last_read_floor_s]
    return BenchRun(
        model=engine.choice.name,
        clips=len(rows),
        audio_s=round(sum(row.audio_s for row in rows), 2),
        corpus_digest=digest.hexdigest()[:16],
        wer=round(_wer(short, streamed=True), 4),
        floor_wer=round(_wer(short, streamed=False), 4),
        rtf=round(sum(row.floor_s for row in short) / audio_s, 3) if audio_s else 0.0,
        end_of_take_p50_s=round(statistics.median(ends), 3),
        end_of_take_p95_s=round(ends[min(len(ends) - 1, int(0.95 * len(ends)))], 3),
        first_partial_s=round(min(first_partials), 3) if first_partials else None,
        peak_rss_bytes=max(_peak_rss() - baseline, 0),
        rows=rows,
        end_ratio_p50=round(statistics.median(ratios), 3) if ratios else None,
        long_wer=round(_wer(long, streamed=True), 4) if long else None,
        long_end_ratios=[_end_ratio(row) for row in long if row.last_read_floor_s],
        long_form_wer=round(_wer(long, streamed=False), 4) if long else None,
        load_before=round(load_before, 2),
        load_after=round(os.getloadavg()[0], 2),
    )


async def speaking(
    speaker: Speaker, engine: Engine, lane: Lane, clips: list[corpus.Clip]
) -> SpeakingRun:
    """Each clip's line (not a long take's) rendered, then heard back by the dictation model."""
    baseline = psutil.Process().memory_info().rss
    lines = sorted({clip.text for clip in clips if clip.text and clip.group != "long"})
    errors = wer.Score(0, 0)
    firsts, render_s, audio_s = [], 0.0, 0.0
    for line in lines:
        rendered = await speaker.render(line)
        firsts.append(rendered.first_audio_s * 1000)
        render_s += rendered.render_s
        pcm = resample_to_rate(rendered.pcm, rendered.sample_rate)
        audio_s += seconds(pcm)
        heard, _ = await lane.final(engine, pcm)
        errors += wer.score(line, heard.text)
    return SpeakingRun(
        model=speaker.model_name,
        clips=len(lines),
        round_trip_wer=round(errors.rate, 4),
        first_audio_ms_p50=round(statistics.median(firsts), 1) if firsts else 0.0,
        rtf=round(render_s / audio_s, 4) if audio_s else 0.0,
        peak_rss_bytes=max(_peak_rss() - baseline, 0),
    )


async def _stream(take: Take, pcm: bytes) -> None:
    """Push `pcm` into `take` a 20 ms frame at a time, at the pace it was spoken."""
    started = time.perf_counter()
    for number, at in enumerate(range(0, len(pcm), FRAME_BYTES), 1):
        await take.push(number, pcm[at : at + FRAME_BYTES])
        due = started + number * FRAME_MS / 1000
        await asyncio.sleep(max(due - time.perf_counter(), 0.0))


async def _last_read_floor(
    engine: Engine, lane: Lane, read: Read | None, pcm: bytes
) -> float | None:
    """The decode seconds of the take's last read run again on the same audio, with its prompt
    and options (None when the take read nothing)."""
    if read is None:
        return None
    span = pcm[read.start_ms * BYTES_PER_MS : read.end_ms * BYTES_PER_MS]
    _, decode_s = await lane.final(engine, span, read.prompt, window=read.kind is Kind.COMMIT)
    return decode_s


def _end_ratio(row: ClipResult) -> float:
    return round(row.end_of_take_s / (row.last_read_floor_s or 1.0), 3)


def _whole(engine: Engine, pcm: bytes) -> str:
    return engine.hear(pcm).text


def _wer(rows: list[ClipResult], *, streamed: bool) -> float:
    total = sum(
        (wer.score(row.said, row.streamed if streamed else row.floor) for row in rows),
        wer.Score(0, 0),
    )
    return total.rate


async def _quiet(event: Any) -> None:
    """A bench take's events go nowhere."""


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
