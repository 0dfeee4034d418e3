"""One take inside the worker with a scripted engine: events in order, partials only when the
lane is idle, every closed segment's words in order, the last segment waited for."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import numpy as np

from forge.ipc.protocol import WorkerEvent
from forge.workers.dictate.audio import FRAME_BYTES
from forge.workers.dictate.engine import Heard
from forge.workers.dictate.lane import Lane
from forge.workers.dictate.protocol import TakeLevel, TakePartial, TakePhase
from forge.workers.dictate.shaping import Axes
from forge.workers.dictate.take import Take


class Loud:
    """A frame is voiced when it is not silent."""

    def voiced(self, frame: bytes) -> bool:
        return any(frame)


class Scripted:
    """Hears "word<n>" for the n-th final decode and "so far" for a partial; a partial may be
    held until the test releases it."""

    def __init__(self) -> None:
        self.finals = 0
        self.partials = 0
        self.release = threading.Event()
        self.release.set()

    def hear(self, pcm: bytes, *, partial: bool = False) -> Heard:
        if partial:
            self.partials += 1
            self.release.wait(10)
            return Heard("so far", 0)
        self.finals += 1
        return Heard(f"word{self.finals}.", 0)


def tone(seconds: float) -> bytes:
    samples = (np.sin(np.arange(int(16000 * seconds)) / 5) * 8000).astype("<i2")
    return samples.tobytes()


def quiet(seconds: float) -> bytes:
    return b"\0" * (int(16000 * seconds) * 2)


async def run(
    pcm: bytes, engine: Scripted, *, pause_each: int = 0, spare: bool = True
) -> tuple[Any, list[Any]]:
    events: list[WorkerEvent] = []

    async def emit(event: WorkerEvent) -> None:
        events.append(event)

    take = Take(7, Axes(), engine, Lane(spare=lambda: spare), Loud(), emit)  # type: ignore[arg-type]
    await take.start()
    for number, at in enumerate(range(0, len(pcm), FRAME_BYTES), 1):
        await take.push(number, pcm[at : at + FRAME_BYTES])
        if pause_each and number % pause_each == 0:
            await asyncio.sleep(0.01)
    finished = await take.finish(len(pcm) // FRAME_BYTES)
    return finished, events


async def test_words_of_every_segment_in_order_and_phases_in_order() -> None:
    engine = Scripted()
    finished, events = await run(tone(1.5) + quiet(1.0) + tone(1.0) + quiet(0.2), engine)
    assert finished.segments == 2
    assert finished.raw == "word1. word2."
    assert finished.text == "Word1. Word2."
    phases = [e.phase for e in events if isinstance(e, TakePhase)]
    assert phases == ["listening", "speech", "silence", "speech", "silence", "transcribing", "done"]
    levels = [e for e in events if isinstance(e, TakeLevel)]
    assert len(levels) == 37  # 3.7 s of audio: one level per 100 ms


async def test_a_partial_while_the_lane_is_idle_and_none_after_the_end() -> None:
    engine = Scripted()
    finished, events = await run(tone(3.0), engine, pause_each=10)
    partials = [e.text for e in events if isinstance(e, TakePartial)]
    assert partials
    assert set(partials) == {"So far."}
    assert finished.raw == "word1."
    done = next(i for i, e in enumerate(events) if isinstance(e, TakePhase) and e.phase == "done")
    assert not any(isinstance(e, TakePartial) for e in events[done:])


async def test_no_partial_when_the_machine_has_no_core_to_spare() -> None:
    engine = Scripted()
    finished, events = await run(tone(3.0), engine, pause_each=10, spare=False)
    assert not [e for e in events if isinstance(e, TakePartial)]
    assert engine.partials == 0
    assert finished.raw == "word1."
