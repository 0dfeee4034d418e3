"""One take inside the worker with a scripted engine: events in order, partials only when the
lane is idle, segments apart by a pause read as one (again when one joins), long speech read in
30 s windows, each from where the last one's finished segments end and prompted with them."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from forge.ipc.protocol import WorkerEvent
from forge.workers.dictate.audio import FRAME_BYTES
from forge.workers.dictate.lane import Lane
from forge.workers.dictate.protocol import TakeLevel, TakePartial, TakePhase
from forge.workers.dictate.shaping import Axes
from forge.workers.dictate.take import Take
from forge.workers.dictate.windows import Heard


class Loud:
    """A frame is voiced when it is not silent."""

    def voiced(self, frame: bytes) -> bool:
        return any(frame)


class Scripted:
    """Hears "word<n>" for the n-th read and "so far" for a partial; a partial may be held until
    the test releases it. A window read says its finished segments end at 25 s and gives the
    token n. Each read's seconds of audio, prompt and whether it was a window are kept."""

    def __init__(self) -> None:
        self.finals = 0
        self.partials = 0
        self.release = threading.Event()
        self.release.set()
        self.calls: list[tuple[float, tuple[int, ...], bool]] = []

    def hear(
        self,
        pcm: bytes,
        *,
        partial: bool = False,
        prompt: Sequence[int] = (),
        window: bool = False,
    ) -> Heard:
        if partial:
            self.partials += 1
            self.release.wait(10)
            return Heard("so far")
        self.finals += 1
        self.calls.append((len(pcm) / 32000, tuple(prompt), window))
        if window:
            return Heard(f"word{self.finals}.", (self.finals,), 25_000)
        return Heard(f"word{self.finals}.")


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

    take = Take(7, Axes(), engine, Lane(spare=lambda: spare), emit, Loud)  # type: ignore[arg-type]
    await take.start()
    for number, at in enumerate(range(0, len(pcm), FRAME_BYTES), 1):
        await take.push(number, pcm[at : at + FRAME_BYTES])
        if pause_each and number % pause_each == 0:
            await asyncio.sleep(0.01)
    finished = await take.finish(len(pcm) // FRAME_BYTES)
    return finished, events


async def test_two_segments_apart_by_a_pause_are_one_read_and_phases_in_order() -> None:
    engine = Scripted()
    finished, events = await run(tone(1.5) + quiet(1.0) + tone(1.0) + quiet(0.2), engine)
    assert finished.segments == 2
    # the take's loop never yielded, so the first segment's read had not begun when the second
    # closed: one read, of both and the pause between
    assert [seconds for seconds, _, _ in engine.calls] == [pytest.approx(3.7, abs=0.01)]
    assert finished.raw == "word1."
    assert finished.text == "Word1."
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


async def test_a_segment_that_joins_a_read_one_is_read_with_it_and_replaces_its_words() -> None:
    """The attack: "open the editor and ... change the font size" was two fragments decoded
    alone. Once the second segment closes, the read is of the first, the pause and the second,
    and its words replace the first's."""
    engine = Scripted()
    finished, _ = await run(tone(1.5) + quiet(2.0) + tone(1.0) + quiet(0.2), engine, pause_each=5)
    first, both = (seconds for seconds, _, _ in engine.calls)
    assert first == pytest.approx(1.8, abs=0.01)  # the first segment and its postroll
    assert both == pytest.approx(4.7, abs=0.01)  # the whole take: the first start to the end
    assert (finished.segments, finished.raw) == (2, "word2.")


async def test_long_speech_is_read_in_windows_each_from_the_last_ones_finished_end() -> None:
    """The attack: speech that never paused was cut every 20 s mid-word and the word at each cut
    was lost. Now each 30 s window is read once it has arrived; the next starts where the
    window's finished segments end (25 s in), so the cut-off sentence is read again whole, and
    is prompted with the tokens of the words before it."""
    engine = Scripted()
    finished, _ = await run(tone(70.0) + quiet(0.2), engine)
    # The voice opens a segment at 0 (its preroll clipped): windows at 0 and 25 s, then the rest.
    assert [(round(s, 2), prompt, window) for s, prompt, window in engine.calls] == [
        (30.0, (), True),
        (30.0, (1,), True),
        (20.2, (1, 2), False),
    ]
    assert finished.raw == "word1. word2. word3."
    assert finished.segments == 1
