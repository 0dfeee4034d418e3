"""One take inside the worker: its audio through the segmenter, its segments through the lane.

The take turns the segmenter's actions into events (levels, phases), starts a decode for each
closed segment as it closes, and asks for a partial when one is due and the lane is idle. Its
`finish` waits for the frames the supervisor says it sent, closes the open segment, waits for
every decode in order and shapes the words.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from forge.ipc.protocol import WorkerEvent
from forge.workers.dictate.audio import FRAME_MS
from forge.workers.dictate.endpointer import Level, Phase, PhaseChanged
from forge.workers.dictate.engine import Engine, Heard
from forge.workers.dictate.lane import Lane
from forge.workers.dictate.protocol import Finished, TakeLevel, TakePartial, TakePhase
from forge.workers.dictate.segmenter import Segment, Segmenter, SegmenterAction
from forge.workers.dictate.shaping import Axes, shape
from forge.workers.dictate.vad import Classifier

STALL_S = 30.0
"""`finish` stops waiting for frames after this long with none arriving. The supervisor re-offers
every frame a full socket refused, so this only bounds a supervisor that died mid-take."""

Emit = Callable[[WorkerEvent], Awaitable[None]]


class Take:
    def __init__(
        self, take: int, axes: Axes, engine: Engine, lane: Lane, classifier: Classifier, emit: Emit
    ) -> None:
        self.id = take
        self.axes = axes
        self._engine = engine
        self._lane = lane
        self._emit = emit
        self._segmenter = Segmenter(classifier)
        self._decodes: list[asyncio.Task[tuple[Heard, float]]] = []
        self._heard: dict[int, str] = {}
        self._partial: asyncio.Task[None] | None = None
        self._last_partial = ""
        self.received = 0
        """The highest audio frame seq read off the take's stream."""
        self._arrived = asyncio.Event()
        self.started = time.perf_counter()
        self.first_partial_s: float | None = None
        self._finishing = False

    async def start(self) -> None:
        await self._emit(TakePhase(take=self.id, phase=Phase.LISTENING.value))

    async def push(self, seq: int, data: bytes) -> None:
        self.received = max(self.received, seq)
        self._arrived.set()
        await self._act(self._segmenter.push(data))
        if self._segmenter.partial_due() and self._lane.idle and self._partial is None:
            self._partial = asyncio.ensure_future(self._read_partial(self._segmenter.open_audio()))

    async def finish(self, frames: int) -> Finished:
        """The take's words once every frame sent is read and every segment decoded.

        A partial still decoding is left to end (its thread cannot be stopped, and the model
        takes one call at a time anyway); what it hears is no longer told."""
        await self._wait_for(frames)
        self._finishing = True
        await self._act(self._segmenter.finish())
        last_s = 0.0
        for index, decode in enumerate(self._decodes):
            heard, last_s = await decode
            self._heard[index] = heard.text
        raw = " ".join(text for _, text in sorted(self._heard.items()) if text)
        await self._emit(TakePhase(take=self.id, phase=Phase.DONE.value))
        return Finished(
            text=shape(raw, self.axes),
            raw=raw,
            audio_ms=self._segmenter.frames * FRAME_MS,
            segments=len(self._decodes),
            last_decode_ms=round(last_s * 1000),
        )

    def cancel(self) -> None:
        for task in (*self._decodes, *([self._partial] if self._partial else [])):
            task.cancel()

    async def _wait_for(self, frames: int) -> None:
        while self.received < frames:
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), STALL_S)
            except TimeoutError:
                return

    async def _act(self, actions: list[SegmenterAction]) -> None:
        for action in actions:
            if isinstance(action, Level):
                await self._emit(TakeLevel(take=self.id, rms=action.rms))
            elif isinstance(action, PhaseChanged):
                await self._emit(TakePhase(take=self.id, phase=action.phase.value))
            elif isinstance(action, Segment):
                self._decodes.append(asyncio.ensure_future(self._decode(action)))

    async def _decode(self, segment: Segment) -> tuple[Heard, float]:
        heard, seconds = await self._lane.final(self._engine, segment.pcm)
        self._heard[segment.index] = heard.text
        return heard, seconds

    async def _read_partial(self, pcm: bytes) -> None:
        try:
            heard = await self._lane.partial(self._engine, pcm)
            if heard is None or self._finishing:
                return
            done = [text for _, text in sorted(self._heard.items()) if text]
            text = shape(" ".join([*done, heard.text]), self.axes)
            if text and text != self._last_partial:
                self._last_partial = text
                if self.first_partial_s is None:
                    self.first_partial_s = time.perf_counter() - self.started
                await self._emit(TakePartial(take=self.id, text=text))
        finally:
            self._partial = None
