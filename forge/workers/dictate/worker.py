"""The dictate worker: takes of speech in, words out; lines of text in, speech out.

The model loads beside the handshake (`preflight`: verifying the pinned digest, loading, ready or
failed, each told as a `Preflight` event), at start when the config says `preflight` and else on
the first take, so the worker is `ready` for the lifecycle at once and a `Begin` waits for it.
Takes are keyed by the supervisor's take id; their audio is the bulk stream `take:<id>`.
"""

from __future__ import annotations

import asyncio
import os

from forge.clock import epoch_ms
from forge.ipc.errors import RequestFailed
from forge.ipc.messages import Reply, StreamFrame
from forge.ipc.worker import Worker, handles
from forge.workers.dictate import bench as corpus_bench
from forge.workers.dictate.engine import Engine
from forge.workers.dictate.lane import Lane
from forge.workers.dictate.models import FACTS, ModelChoice, ModelMissing, choose, verify
from forge.workers.dictate.protocol import (
    AUDIO_STREAM,
    DICTATE,
    Began,
    Begin,
    Bench,
    Benched,
    Cancel,
    Finish,
    Finished,
    GetStatus,
    ModelState,
    Preflight,
    Say,
    SpeakingState,
    Spoken,
    Status,
    TakeFailed,
)
from forge.workers.dictate.shaping import Axes
from forge.workers.dictate.take import Take
from forge.workers.dictate.tts import Speaker, SpeechFailed

MODEL_WAIT_S = 60.0
"""A `Begin` waits this long for the model to load before it is refused."""


class DictateWorker(Worker):
    kind = DICTATE.kind

    async def setup(self) -> None:
        tts = self.config.get("tts") or {}
        self._speaker = Speaker(
            engine=str(tts.get("engine") or "espeak-ng"),
            voice=tts.get("voice"),
            piper_model=tts.get("piper_model"),
        )
        self._threads = int(self.config.get("cpu_threads") or min(2, os.cpu_count() or 1))
        self._model = ModelState(state="pending", at_ms=epoch_ms(self.clock))
        self._engine: asyncio.Future[Engine] = asyncio.get_running_loop().create_future()
        self._lane = Lane()
        self._takes: dict[int, Take] = {}
        self._voices: list[str] | None = None
        self._loading: asyncio.Task[None] | None = None
        if self.config.get("preflight"):
            self._load()

    # Takes.

    @handles(Begin)
    async def begin(self, request: Begin) -> Began:
        engine = await self._loaded()
        if request.take in self._takes:
            raise RequestFailed("take_exists", f"take {request.take} is already open")
        axes = Axes(request.axes.styling, request.axes.structure, request.axes.context)
        take = Take(request.take, axes, engine, self._lane, self.emit)
        self._takes[request.take] = take
        await take.start()
        return Began(model=engine.choice.name)

    @handles(Finish)
    async def finish(self, request: Finish) -> Finished:
        take = self._take(request.take)
        try:
            return await take.finish(request.frames)
        except Exception as error:
            self.log.exception("dictate_take_failed", take=request.take)
            raise RequestFailed("take_failed", f"the take could not be decoded: {error}") from None
        finally:
            self._takes.pop(request.take, None)

    @handles(Cancel)
    async def cancel(self, request: Cancel) -> None:
        take = self._takes.pop(request.take, None)
        if take is not None:
            take.cancel()

    async def on_bulk(self, frame: StreamFrame) -> None:
        if not frame.stream_id.startswith(AUDIO_STREAM):
            return
        take = self._takes.get(int(frame.stream_id[len(AUDIO_STREAM) :]))
        if take is None:
            return
        number = frame.meta if isinstance(frame.meta, int) else frame.seq
        try:
            await take.push(number, bytes(frame.payload))
        except Exception as error:
            self.log.exception("dictate_take_failed", take=take.id)
            self._takes.pop(take.id, None)
            take.cancel()
            await self.emit(TakeFailed(take=take.id, why=f"the audio could not be read: {error}"))

    def _take(self, take: int) -> Take:
        found = self._takes.get(take)
        if found is None:
            raise RequestFailed("no_take", f"take {take} is not open")
        return found

    # Speech.

    @handles(Say)
    async def say(self, request: Say) -> Reply:
        try:
            rendered = await self._speaker.render(request.text, request.voice)
        except SpeechFailed as failed:
            raise RequestFailed("speech_failed", str(failed)) from None
        spoken = Spoken(
            sample_rate=rendered.sample_rate,
            first_audio_ms=round(rendered.first_audio_s * 1000, 1),
            render_ms=round(rendered.render_s * 1000, 1),
        )
        return Reply(spoken, (rendered.pcm,))

    # Reads.

    @handles(GetStatus)
    async def status(self, request: GetStatus) -> Status:
        return Status(model=self._model, speaking=await self._speaking(), takes=sorted(self._takes))

    @handles(Bench)
    async def bench(self, request: Bench) -> Benched:
        engine = await self._loaded()
        clips = corpus_bench.chosen(request.clips)
        if not clips:
            raise RequestFailed("no_clips", f"no corpus clip is named {', '.join(request.clips)}")
        dictation = await corpus_bench.dictation(engine, self._lane, clips)
        speaking = None
        if request.speaking:
            speaking = await corpus_bench.speaking(self._speaker, engine, self._lane, clips)
        return Benched(dictation=dictation, speaking=speaking)

    # The model.

    async def _preflight(self) -> None:
        try:
            choice = choose(self.config.get("models_dir"))
            await self._moved("verifying", choice)
            await asyncio.to_thread(verify, choice)
            await self._moved("loading", choice)
            engine = await asyncio.to_thread(Engine, choice, self._threads)
        except (ModelMissing, RuntimeError, ValueError, OSError) as error:
            self._model = ModelState(state="failed", error=str(error), at_ms=epoch_ms(self.clock))
            self._engine.set_exception(RequestFailed("model_failed", str(error)))
            self._engine.exception()  # retrieved: each Begin re-raises it
            await self.emit(Preflight(model=self._model))
            return
        await self._moved("ready", choice)
        self._engine.set_result(engine)

    async def _moved(self, state: str, choice: ModelChoice) -> None:
        self._model = ModelState(
            state=state,
            name=choice.name,
            path=str(choice.path),
            size=choice.size(),
            sha256=choice.sha256,
            origin=choice.origin,
            at_ms=epoch_ms(self.clock),
            facts=FACTS if choice.sha256 else None,
        )
        await self.emit(Preflight(model=self._model))

    def _load(self) -> None:
        """Start the preflight once: at setup when asked to, else on the first need."""
        if self._loading is None:
            self._loading = self.spawn(self._preflight())

    async def _loaded(self) -> Engine:
        self._load()
        try:
            return await asyncio.wait_for(asyncio.shield(self._engine), MODEL_WAIT_S)
        except TimeoutError:
            raise RequestFailed(
                "model_loading", f"the model is still {self._model.state} after {MODEL_WAIT_S:g} s"
            ) from None

    async def _speaking(self) -> SpeakingState:
        error = None
        if self._voices is None:
            try:
                self._voices = await self._speaker.voices()
            except SpeechFailed as failed:
                error, self._voices = str(failed), []
        return SpeakingState(
            engine=self._speaker.engine,
            model=self._speaker.model_name,
            voices=self._voices,
            voice=self._speaker.voice,
            state="ready" if self._voices else "pending",
            error=error,
        )
