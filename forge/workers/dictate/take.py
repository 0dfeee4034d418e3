"""One take inside the worker: its audio through its own segmenter, its reads through the lane.

Everything that decides a take's words is the take's own, made when it begins: its voice gate
(webrtcvad adapts to what it hears, so one gate shared by every take let one take's noise move
another's segments and change its words), its segmenter, its windows (`windows.py`: what is read
when, and which words are final) and the prompts they give. A take's words depend on its own
audio alone, whatever other takes run before or beside it.

The take turns the segmenter's actions into events (levels, phases) and tells its windows where
a voice spoke; one loop runs the windows' reads on the lane, one at a time and in order, each as
it stands when its turn comes (a read that another superseded while it queued is not run). A
partial (one beam, the open window so far) is asked for when one is due and the lane is idle.
`finish` waits for the frames the supervisor says it sent, closes the open segment, waits for
the last read and shapes the words.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from forge.ipc.protocol import WorkerEvent
from forge.workers.dictate.audio import FRAME_MS
from forge.workers.dictate.endpointer import Level, Phase, PhaseChanged
from forge.workers.dictate.engine import Engine
from forge.workers.dictate.lane import Lane
from forge.workers.dictate.protocol import Finished, TakeLevel, TakePartial, TakePhase
from forge.workers.dictate.segmenter import Segment, Segmenter, SegmenterAction
from forge.workers.dictate.shaping import Axes, shape
from forge.workers.dictate.vad import Classifier, VoiceGate
from forge.workers.dictate.windows import WINDOW_MS, Kind, Read, Windows

STALL_S = 30.0
"""`finish` stops waiting for frames after this long with none arriving. The supervisor re-offers
every frame a full socket refused, so this only bounds a supervisor that died mid-take."""

Emit = Callable[[WorkerEvent], Awaitable[None]]


class Take:
    def __init__(
        self,
        take: int,
        axes: Axes,
        engine: Engine,
        lane: Lane,
        emit: Emit,
        classifier: Callable[[], Classifier] = VoiceGate,
    ) -> None:
        self.id = take
        self.axes = axes
        self._engine = engine
        self._lane = lane
        self._emit = emit
        self._segmenter = Segmenter(classifier())
        self._windows = Windows()
        self._segments = 0
        self._more = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self._last_read_s = 0.0
        self.last_read: Read | None = None
        """The take's last read, run: what the end of the take waited on (the bench times the
        floor on the same audio)."""
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
        actions = self._segmenter.push(data)
        self._spoke(actions)
        await self._tell(actions)
        self._heard()
        if self._segmenter.partial_due() and self._lane.idle and self._partial is None:
            self._partial = asyncio.ensure_future(self._read_partial())

    async def finish(self, frames: int) -> Finished:
        """The take's words once every frame sent is read and every read it needs is heard.

        A partial still decoding is left to end (its thread cannot be stopped, and the model
        takes one call at a time anyway); what it hears is no longer told."""
        await self._wait_for(frames)
        self._finishing = True
        actions = self._segmenter.finish()
        self._spoke(actions)
        self._windows.end()
        self._heard()
        await self._tell(actions)
        self._more.set()
        if self._reader is not None:
            await self._reader
        raw = self._windows.text()
        await self._emit(TakePhase(take=self.id, phase=Phase.DONE.value))
        return Finished(
            text=shape(raw, self.axes),
            raw=raw,
            audio_ms=self._segmenter.frames * FRAME_MS,
            segments=self._segments,
            last_decode_ms=round(self._last_read_s * 1000),
        )

    def cancel(self) -> None:
        for task in (self._reader, self._partial):
            if task is not None:
                task.cancel()

    async def _wait_for(self, frames: int) -> None:
        while self.received < frames:
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), STALL_S)
            except TimeoutError:
                return

    async def _tell(self, actions: list[SegmenterAction]) -> None:
        for action in actions:
            if isinstance(action, Level):
                await self._emit(TakeLevel(take=self.id, rms=action.rms))
            elif isinstance(action, PhaseChanged):
                await self._emit(TakePhase(take=self.id, phase=action.phase.value))

    def _spoke(self, actions: list[SegmenterAction]) -> None:
        """Tell the windows where a voice spoke, before any await: at the end of a take, the
        reader must not see the last segment closed before it sees the take ended (it would read
        the window ahead, then read it again to the end of the audio)."""
        for segment in actions:
            if not isinstance(segment, Segment):
                continue
            if segment.end_ms is None:
                self._windows.opened(segment.start_ms)
            else:
                self._segments += 1
                self._windows.closed(segment.start_ms, segment.end_ms)

    def _heard(self) -> None:
        """Tell the windows how far the audio has come, let go of what no read reaches, and wake
        the reader (starting it at the take's first voice)."""
        self._windows.heard(self._segmenter.heard_ms)
        timing = self._segmenter.endpointer.timing
        preroll_ms = (timing.preroll_frames + timing.onset_window) * FRAME_MS
        self._segmenter.let_go(self._windows.needed_from_ms(preroll_ms))
        if self._windows.next() is None:
            return
        self._more.set()
        if self._reader is None:
            self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        """Run the windows' reads in turn until the take has ended and none is left."""
        while not self._windows.done_reading:
            read = self._windows.next()
            if read is None:
                self._more.clear()
                await self._more.wait()
                continue
            pcm = self._segmenter.audio(read.start_ms, read.end_ms)
            window = read.kind is Kind.COMMIT
            heard, self._last_read_s = await self._lane.final(
                self._engine, pcm, read.prompt, window=window
            )
            self._windows.done(read, heard)
            self.last_read = read

    async def _read_partial(self) -> None:
        try:
            start = self._windows.window_ms
            if start is None:
                return
            end = self._segmenter.heard_ms
            pcm = self._segmenter.audio(max(start, end - WINDOW_MS), end)
            heard = await self._lane.partial(self._engine, pcm, self._windows.prompt())
            if heard is None or self._finishing:
                return
            text = shape(" ".join(t for t in (self._windows.final(), heard.text) if t), self.axes)
            if text and text != self._last_partial:
                self._last_partial = text
                if self.first_partial_s is None:
                    self.first_partial_s = time.perf_counter() - self.started
                await self._emit(TakePartial(take=self.id, text=text))
        finally:
            self._partial = None
