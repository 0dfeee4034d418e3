"""Dictation and voice on the socket: takes, their audio, listeners, speech and the models page.

A take (`dictate_stream`) registers as the message is dispatched, so the kind-0 frame behind it
on the same connection always finds it. Its audio waits in the take until the worker's `Begin`
answers (the model may still be loading), then rides the take's bulk stream; `dictate_stop` asks
the worker to `Finish` (it reads up to the last frame sent, decodes the open segment and answers
the shaped words) and `dictate_cancel` drops it. Everything about a take goes to the connection
that began it and nobody else. A connection that closes drops its take (the worker forgets it,
nothing lands); a worker that dies mid-take fails every take it held (`dictate_failed`) and the
manager restarts it, so the next take works.

Voice: `voice_mode` turns one connection's switch for one seat (the rules are
`rules.VoiceRoom`), answered as `voice_mode_state` to every subscriber of the seat; an agent seat's
agent hears of it through `AgentDoor` (the count, and the `[Voice]` note as a prompt). A take
stopped with `send` on an agent seat's composer becomes the agent's next prompt.
`speak(seat, text)` is the call other areas use: rendered by the worker, sent as `voice_audio`
numbered per seat in render order to the seat's subscribers and listeners; nothing is rendered
for a seat nobody listens to. `voice_preview` and `voice_say` (`forge say`) use it.

This module imports only the worker kind's protocol (`forge.workers.dictate.protocol`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import msgspec

from forge import paths
from forge.clock import epoch_ms
from forge.health.atomic import write_json
from forge.ipc.manager import WorkerEvent, WorkerHandle, WorkerManager, WorkerRow, WorkerState
from forge.ipc.protocol import WorkerRequest
from forge.logs import get_logger
from forge.supervisor.service import WorkerService
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.seats import UnknownProject
from forge.supervisor.voice import models as dictate_models
from forge.supervisor.voice.rules import NOTE_TEXT, Note, TakeBook, VoiceChange, VoiceRoom
from forge.wire import server
from forge.wire.binary import Dictation
from forge.wire.client import (
    VOICE_SAY_MAX_CHARS,
    DictateBench,
    DictateCancel,
    DictateStop,
    DictateStream,
    VoiceMode,
    VoicePreview,
    VoiceSay,
)
from forge.wire.dictate import (
    Axes,
    DictateEnded,
    DictateFailed,
    DictateLevel,
    DictateMessage,
    DictatePartial,
    DictatePhase,
    DictateStarted,
    Said,
    VoiceAudio,
    VoiceModeState,
    body,
)
from forge.wire.errors import ClientRefusal
from forge.wire.seats import HOME, Seat, session
from forge.wire.server import JsonFrame
from forge.workers.dictate import protocol as worker
from forge.workers.dictate.protocol import DICTATE, ModelState, SpeakingState

log = get_logger(__name__)
ReplyT = TypeVar("ReplyT")

WORKER_NAME = "dictate"
BEGIN_S = 90.0
"""A take's `Begin` may wait this long (a cold worker loads its model first)."""
FINISH_S = 120.0
"""The end of a take: the open segment's decode, and any closed ones still queued."""
SAY_S = 30.0
BENCH_S = 1800.0
BATCH_BYTES = 3200
"""Audio goes to the worker in batches of 100 ms (five 20 ms frames): a bulk send costs the same
for 640 bytes as for 3200, and the worker's levels are per 100 ms anyway. `dictate_stop` sends
what is left at once."""
PENDING_BATCHES = 600
"""Audio kept while the worker begins a take, or while its bulk socket is full (60 s of 100 ms
batches); past it audio drops."""
RETRY_S = 0.01
"""How soon audio the worker's full bulk socket refused is offered again."""
PREVIEW_LINE = "This is how this seat will sound when it speaks to you."
BENCH_FILE = "dictate-bench.json"


class AgentDoor(Protocol):
    """Agent seats as the voice area reaches them (the agent service; the composition root
    joins the two, which import nothing of each other)."""

    def has_agent(self, key: Seat) -> bool: ...

    async def dictated(self, key: Seat, text: str) -> str:
        """Send `text` as the seat's next prompt (source `dictation`); its uuid. Raises
        `ClientRefusal` naming why not."""
        ...

    def voice_changed(self, key: Seat, note: str | None) -> None:
        """The seat's listener count changed (`SeatState.voice_listeners`); `note` is the
        `[Voice]` note for its agent, when one is due."""
        ...


@dataclass(eq=False)
class LiveTake:
    """One take as the supervisor holds it, from `dictate_stream` to its end."""

    id: int
    connection: Connection
    seat: Seat
    surface: str | None
    axes: Axes
    batch: bytearray = field(default_factory=bytearray)
    """Audio read since the last batch went to the worker."""
    frames: int = 0
    """Audio batches the worker's bulk socket took (each is sent with its number as meta)."""
    pending: list[bytes] | None = field(default_factory=list)
    """Audio that arrived before the worker's `Begin` answered; None once it has."""
    outbox: deque[bytes] = field(default_factory=deque)
    """Audio the worker's bulk socket could not take yet (its queue was full): sent in order."""
    drained: asyncio.Event = field(default_factory=asyncio.Event)
    """Set while the outbox is empty (a `Finish` waits for it)."""
    retry: asyncio.Task[None] | None = None
    began: bool = False
    stopping: bool = False
    as_prompt: bool = False
    """Stopped with `send`: the words become the seat's agent's next prompt."""
    beginning: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        self.drained.set()

    @property
    def owner(self) -> Connection:
        return self.connection

    def send(self, message: DictateMessage) -> None:
        self.connection.send(message)


class DictationService(WorkerService):
    """Takes, voice and the models page over the one dictate worker."""

    name = "dictate"

    def __init__(self, supervisor: Supervisor, manager: WorkerManager) -> None:
        super().__init__(supervisor, manager)
        self._handle: WorkerHandle | None = None
        self._takes: TakeBook[LiveTake] = TakeBook()
        self._numbers = itertools.count(1)
        self.room: VoiceRoom[Connection] = VoiceRoom()
        self.agents: AgentDoor | None = None
        """Set by the composition root when agent seats are served."""
        self._voice_seq: defaultdict[Seat, int] = defaultdict(int)
        self._voice_locks: defaultdict[Seat, asyncio.Lock] = defaultdict(asyncio.Lock)
        self.model = ModelState(state="pending")
        self.speaking: SpeakingState | None = None
        self.preview_error: str | None = None
        self.bench: dict[str, Any] | None = None
        self.speaking_bench: dict[str, Any] | None = None
        self._bench_file = paths.state_dir() / BENCH_FILE
        self.results, self.speaking_results = _read_results(self._bench_file)

    def install(self) -> None:
        s = self.supervisor
        s.register_verb(DictateStream, self._stream)
        s.register_verb(DictateStop, self._stop)
        s.register_verb(DictateCancel, self._cancel)
        s.register_verb(VoiceMode, self._voice_mode)
        s.register_verb(VoicePreview, self._voice_preview)
        s.register_verb(VoiceSay, self._voice_say)
        s.register_verb(DictateBench, self._bench)
        s.register_binary(Dictation, self._audio)
        s.register_subject("dictate_models", self._models_view)
        s.home_fields["dictate"] = self._home_dictate
        s.home_fields["voice"] = self._home_voice
        s.on_disconnect(self._disconnected)
        super().install()
        config = s.loaded.config
        if config.dictate.enabled or config.tts.enabled:
            self._worker()

    # Takes.

    async def _stream(self, connection: Connection, message: DictateStream) -> None:
        config = self.supervisor.loaded.config
        seat = message.key
        if not config.dictate.enabled:
            why = "dictation is off on this server ([dictate] enabled = false in forge.toml)"
            raise ClientRefusal("dictate_stream", why, seat)
        self._refuse_take(connection, seat)
        try:
            await self.supervisor.start_seat(seat)
        except UnknownProject as unknown:
            raise ClientRefusal("dictate_stream", str(unknown), seat) from None
        self._refuse_take(connection, seat)  # another take may have begun while the seat started
        options = message.options
        axes = Axes(
            styling=(options and options.styling) or config.dictate.styling,
            structure=(options and options.structure) or config.dictate.structure,
            context=(options and options.context) or config.dictate.context,
        )
        take = LiveTake(next(self._numbers), connection, seat, message.surface, axes)
        self._takes.add(take)
        log.info("dictate_take_started", take=take.id, seat=str(seat), peer=connection.peer)
        take.send(DictateStarted(key=seat, take=take.id, surface=take.surface, options=axes))
        take.beginning = self.tasks.spawn(self._begin(take))

    def _refuse_take(self, connection: Connection, seat: Seat) -> None:
        why = self._takes.refusal(connection, seat)
        if why is not None:
            raise ClientRefusal("dictate_stream", why, seat)

    async def _begin(self, take: LiveTake) -> None:
        axes = worker.Axes(take.axes.styling, take.axes.structure, take.axes.context)
        begin = worker.Begin(take=take.id, axes=axes)
        try:
            await self._ask_take(take, begin, "the take could not begin", BEGIN_S)
        except ClientRefusal as refusal:
            self._fail(take, refusal.why)
            return
        if self._takes.get(take.id) is not take:
            self._forget_in_worker(take)
            return
        take.began = True
        pending, take.pending = take.pending or [], None
        for samples in pending:
            self._forward(take, samples)

    async def _audio(self, connection: Connection, frame: Dictation) -> None:
        take = self._takes.of(connection)
        if take is None or take.stopping:
            reason = "no take is open on this connection" if take is None else "the take stopped"
            log.debug("socket_binary_dropped", peer=connection.peer, kind=0, reason=reason)
            return
        take.batch += frame.samples
        if len(take.batch) >= BATCH_BYTES:
            self._send_batch(take)

    def _send_batch(self, take: LiveTake) -> None:
        """The audio read since the last batch, to the worker (or kept until `Begin` answers)."""
        if not take.batch:
            return
        samples = bytes(take.batch)
        take.batch.clear()
        if take.pending is None:
            self._forward(take, samples)
        elif len(take.pending) < PENDING_BATCHES:
            take.pending.append(samples)
        else:
            log.debug("dictate_audio_dropped", take=take.id, reason="take backlog")

    def _forward(self, take: LiveTake, samples: bytes) -> None:
        if len(take.outbox) >= PENDING_BATCHES:
            log.debug("dictate_audio_dropped", take=take.id, frame=take.frames)
            return
        take.outbox.append(samples)
        self._drain(take)

    def _drain(self, take: LiveTake) -> None:
        """Send the take's waiting audio until the worker's queue is full; retry shortly then.

        Every frame must reach the worker (a lost frame is a lost syllable), and a full bulk
        socket is only ever a moment: the worker reads audio on its own loop, decodes in a
        thread."""
        handle = self._worker()
        stream = worker.audio_stream(take.id)
        while take.outbox:
            if not handle.send_bulk(stream, take.outbox[0], meta=take.frames + 1):
                if take.retry is None:
                    take.retry = self.tasks.spawn(self._retry(take))
                take.drained.clear()
                return
            take.outbox.popleft()
            take.frames += 1
        take.drained.set()

    async def _retry(self, take: LiveTake) -> None:
        await self.supervisor.clock.sleep(RETRY_S)
        take.retry = None
        if self._takes.get(take.id) is take:
            self._drain(take)
        else:
            take.drained.set()

    async def _stop(self, connection: Connection, message: DictateStop) -> None:
        take = self._own(connection, message.key, "dictate_stop")
        if message.send:
            self._refuse_send(take)
        self._send_batch(take)
        take.stopping = True
        take.as_prompt = message.send
        self.tasks.spawn(self._finish(take))

    def _refuse_send(self, take: LiveTake) -> None:
        """Refuse `send` (before the take stops) unless its words can become a prompt."""
        if take.surface != "composer":
            why = (
                "send lands the words as a prompt: it needs a take begun on the composer "
                f"surface, not {take.surface}"
            )
            raise ClientRefusal("dictate_stop", why, take.seat)
        if self.agents is None or not self.agents.has_agent(take.seat):
            why = (
                f"seat {take.seat} has no agent to send the words to "
                "(spawn one, or stop without send)"
            )
            raise ClientRefusal("dictate_stop", why, take.seat)

    async def _finish(self, take: LiveTake) -> None:
        if take.beginning is not None:
            await asyncio.gather(take.beginning, return_exceptions=True)
        await take.drained.wait()
        if self._takes.get(take.id) is not take:
            return
        request = worker.Finish(take=take.id, frames=take.frames)
        try:
            finished = await self._ask_take(
                take, request, "the take could not be transcribed", FINISH_S
            )
        except ClientRefusal as refusal:
            self._fail(take, refusal.why)
            return
        if not self._end(take):
            return
        log.info(
            "dictate_take_ended",
            take=take.id,
            seat=str(take.seat),
            audio_ms=finished.audio_ms,
            segments=finished.segments,
            chars=len(finished.text),
        )
        prompt = await self._send_as_prompt(take, finished.text) if take.as_prompt else None
        take.send(
            DictateEnded(
                key=take.seat,
                take=take.id,
                surface=take.surface,
                text=finished.text,
                raw=finished.raw,
                options=take.axes,
                audio_ms=finished.audio_ms,
                segments=finished.segments,
                prompt=prompt,
            )
        )

    async def _send_as_prompt(self, take: LiveTake, text: str) -> str | None:
        """The take's words as its seat's agent's next prompt: the prompt's uuid, or None when
        there were no words or the agent refused (that refusal goes to the take's connection)."""
        if not text.strip() or self.agents is None:
            return None
        try:
            return await self.agents.dictated(take.seat, text)
        except ClientRefusal as refusal:
            take.connection.send(server.Error(what="dictate_stop", why=refusal.why, seat=take.seat))
            return None

    async def _cancel(self, connection: Connection, message: DictateCancel) -> None:
        take = self._own(connection, message.key, "dictate_cancel")
        self._drop(take, "cancelled by its client")
        take.send(
            DictateFailed(
                key=take.seat,
                take=take.id,
                surface=take.surface,
                why="the take was cancelled",
                cancelled=True,
            )
        )

    def _own(self, connection: Connection, seat: Seat, what: str) -> LiveTake:
        take = self._takes.of(connection)
        if take is None or take.seat != seat:
            raise ClientRefusal(what, f"this connection has no live take on seat {seat}", seat)
        if take.stopping:
            raise ClientRefusal(what, f"the take on seat {seat} is already being transcribed", seat)
        return take

    def _end(self, take: LiveTake) -> bool:
        """Forget `take` and end its audio stream to the worker; False when it was not live."""
        if not self._takes.remove(take):
            return False
        if self._handle is not None:
            self._handle.end_bulk(worker.audio_stream(take.id))
        return True

    def _drop(self, take: LiveTake, reason: str) -> None:
        """The take ends with nothing landing; the worker forgets it."""
        take.drained.set()
        if not self._end(take):
            return
        log.info("dictate_take_dropped", take=take.id, seat=str(take.seat), reason=reason)
        self._forget_in_worker(take)

    def _forget_in_worker(self, take: LiveTake) -> None:
        handle = self._handle
        if handle is not None and handle.state is WorkerState.READY:
            self.tasks.spawn(self._cancel_in_worker(handle, take.id))

    async def _cancel_in_worker(self, handle: WorkerHandle, take: int) -> None:
        await self.tell(
            handle, worker.Cancel(take=take), "dictate_cancel_unsent", expected=True, take=take
        )

    def _fail(self, take: LiveTake, why: str) -> None:
        take.drained.set()
        if not self._end(take):
            return
        log.warning("dictate_take_failed", take=take.id, seat=str(take.seat), why=why)
        take.send(DictateFailed(key=take.seat, take=take.id, surface=take.surface, why=why))

    # Voice.

    async def _voice_mode(self, connection: Connection, message: VoiceMode) -> None:
        """Only for a started seat: a state for one that is not there would say it exists (S04)."""
        self.supervisor.require_seat("voice_mode", message.key)
        change = self.room.turn(message.key, connection, message.on, message.explicit)
        self._voice_changed(change, also=connection)

    def _voice_changed(self, change: VoiceChange, also: Connection | None = None) -> None:
        seat = change.seat
        state = self.supervisor.seats.get(seat)
        if state is not None:
            state.voice_listeners = change.listeners
        frame = JsonFrame.encode(VoiceModeState(key=seat, listeners=change.listeners))
        for connection in self.supervisor.subscribers(session(seat)) | ({also} if also else set()):
            connection.send_frame(frame)
        note = None if change.note is None else NOTE_TEXT[change.note]
        delivered = self.agents is not None and self.agents.has_agent(seat)
        if self.agents is not None:
            self.agents.voice_changed(seat, note)
        if change.note is not None:
            log.info(
                "voice_note", seat=str(seat), note=change.note.value, text=note, delivered=delivered
            )

    def listening_note(self, seat: Seat) -> str | None:
        """The note for an agent that starts on `seat` while someone listens (`AgentDoor`'s
        other side: the agent seats' `Speech`)."""
        return NOTE_TEXT[Note.LISTENING] if self.room.listeners(seat) else None

    async def speak(self, seat: Seat, text: str, voice: str | None = None) -> Said:
        """Render `text` on `seat`'s voice stream; the supervisor call other areas use.

        Nothing is rendered for a seat of no configured project, when `[tts]` is off, or when
        nobody has voice on for the seat."""
        if self.supervisor.loaded.config.project(seat.org, seat.project) is None:
            return Said(ok=False, why=str(UnknownProject(seat)))
        if not self.supervisor.loaded.config.tts.enabled:
            return Said(ok=False, why="speech is off on this server ([tts] enabled = false)")
        if self.room.listeners(seat) == 0:
            return Said(ok=False, why=f"no client has voice on for seat {seat}")
        async with self._voice_locks[seat]:
            try:
                spoken, raw = await self.ask_raw(
                    self._worker(),
                    worker.Say(text=text, voice=voice),
                    what="voice_say",
                    seat=seat,
                    doing="the speech could not be rendered",
                    within=SAY_S,
                )
            except ClientRefusal as refusal:
                return Said(ok=False, why=refusal.why)
            samples = bytes(raw.payloads[0]) if raw.payloads else b""
            self._voice_seq[seat] += 1
            seq = self._voice_seq[seat]
            frame = JsonFrame.encode(VoiceAudio.of(seat, seq, spoken.sample_rate, samples))
            for connection in self.supervisor.subscribers(session(seat)) | self.room.members(seat):
                connection.send_frame(frame)
        seconds = round(len(samples) / 2 / spoken.sample_rate, 2)
        log.info("voice_spoken", seat=str(seat), seq=seq, seconds=seconds, chars=len(text))
        return Said(ok=True, seq=seq, seconds=seconds)

    async def _voice_preview(self, connection: Connection, message: VoicePreview) -> None:
        seat = message.key
        if self.room.listeners(seat) == 0:
            why = f"no client has voice on for seat {seat}: turn the speaker on to hear a preview"
            raise ClientRefusal("voice_preview", why, seat)
        said = await self.speak(seat, PREVIEW_LINE, message.voice)
        previous, self.preview_error = self.preview_error, None if said.ok else said.why
        if previous != self.preview_error:
            await self._publish_models()
        if not said.ok:
            raise ClientRefusal("voice_preview", str(said.why), seat)

    async def _voice_say(self, connection: Connection, message: VoiceSay) -> None:
        if len(message.text) > VOICE_SAY_MAX_CHARS:
            why = f"the text is {len(message.text)} characters; a line is at most 4000"
            said = Said(ok=False, why=why)
        else:
            said = await self.speak(message.key, message.text, message.voice)
        if message.reply_to is not None:
            connection.send(server.Reply(reply_to=message.reply_to, body=body(said)))
        elif not said.ok:
            raise ClientRefusal("voice_say", str(said.why), message.key)

    # The models page and the bench.

    async def _models_view(self) -> dict[str, Any]:
        return dictate_models.view(
            self.supervisor.loaded.config,
            self.model,
            self.speaking,
            preview_error=self.preview_error,
            bench=self.bench,
            results=self.results,
            speaking_bench=self.speaking_bench,
            speaking_results=self.speaking_results,
        )

    def _home_dictate(self) -> dict[str, Any]:
        """Home's `dictate`: whether dictation is on, the model's preflight, where models land."""
        config = self.supervisor.loaded.config
        return {
            "enabled": config.dictate.enabled,
            "state": self.model.state,
            "model": self.model.name,
            "error": self.model.error,
            "models_dir": str(config.dictate.models_dir) if config.dictate.models_dir else None,
        }

    def _home_voice(self) -> dict[str, Any]:
        """Home's `voice`: whether `[tts]` is on, its engine, where the speaking model lands."""
        tts = self.supervisor.loaded.config.tts
        return {
            "enabled": tts.enabled,
            "engine": tts.engine,
            "models_dir": str(tts.piper_model.parent) if tts.piper_model else None,
        }

    async def _publish_models(self) -> None:
        frame = JsonFrame.encode(
            server.Update.of("dictate_models_changed", await self._models_view(), seq=None)
        )
        for connection in self.supervisor.subscribers("dictate_models"):
            connection.send_frame(frame)

    def _announce_available(self) -> None:
        frame = JsonFrame.encode(server.Update.of("dictate_availability", None, seq=None))
        holders = self.supervisor.subscribers(HOME) | self.supervisor.subscribers("dictate_models")
        for connection in holders:
            connection.send_frame(frame)

    async def _bench(self, connection: Connection, message: DictateBench) -> None:
        if self.bench is not None:
            raise ClientRefusal("dictate_bench", "a bench is already running")
        self.bench = {"target": self.model.name, "tier": "local", "state": "running"}
        self.speaking_bench = (
            {"state": "queued"} if self.supervisor.loaded.config.tts.enabled else None
        )
        await self._publish_models()
        self.tasks.spawn(self._run_bench(connection, message))

    async def _run_bench(self, connection: Connection, message: DictateBench) -> None:
        speaking = self.supervisor.loaded.config.tts.enabled
        request = worker.Bench(speaking=speaking, clips=message.clips or [])
        try:
            benched = await self.ask(
                self._worker(),
                request,
                what="dictate_bench",
                doing="the bench failed",
                within=BENCH_S,
            )
        except ClientRefusal as refusal:
            answer: dict[str, Any] = {"ok": False, "why": refusal.why}
        else:
            at = epoch_ms(self.supervisor.clock)
            run = {"at": at, "tier": "local", **msgspec.to_builtins(benched.dictation)}
            self.results.append(run)
            if benched.speaking is not None:
                self.speaking_results.append({"at": at, **msgspec.to_builtins(benched.speaking)})
            self._write_results()
            answer = {"ok": True, "run": run, "speaking": msgspec.to_builtins(benched.speaking)}
        self.bench = self.speaking_bench = None
        await self._publish_models()
        if message.reply_to is not None:
            connection.send(server.Reply(reply_to=message.reply_to, body=answer))
        elif not answer["ok"]:
            connection.send(server.Error(what="dictate_bench", why=answer["why"]))

    def _write_results(self) -> None:
        document = {"results": self.results, "speaking_results": self.speaking_results}
        write_json(self._bench_file, document)

    # The worker.

    def _worker(self) -> WorkerHandle:
        if self._handle is None:
            config = self.supervisor.loaded.config
            spec = DICTATE.spec(
                WORKER_NAME,
                config={
                    "preflight": config.dictate.enabled,
                    "models_dir": str(config.dictate.models_dir or "") or None,
                    "tts": {
                        "engine": config.tts.engine,
                        "voice": config.tts.voice,
                        "piper_model": str(config.tts.piper_model or "") or None,
                    },
                },
            )
            self._handle = self.manager.start(spec)
            self._handle.on_event(self._on_event)
        return self._handle

    def _on_event(self, event: WorkerEvent) -> None:
        typed = DICTATE.decode_event(event.event, event.data)
        if isinstance(typed, worker.Preflight):
            self._preflight(typed.model)
            return
        take = self._takes.get(getattr(typed, "take", 0))
        if take is None:
            return
        if isinstance(typed, worker.TakeLevel):
            take.send(DictateLevel(key=take.seat, take=take.id, rms=typed.rms))
        elif isinstance(typed, worker.TakePhase):
            take.send(DictatePhase(key=take.seat, take=take.id, phase=typed.phase))
        elif isinstance(typed, worker.TakePartial):
            take.send(DictatePartial(key=take.seat, take=take.id, text=typed.text))
        elif isinstance(typed, worker.TakeFailed):
            self._fail(take, typed.why)

    def _preflight(self, model: ModelState) -> None:
        self.model = model
        log.info("dictate_preflight", state=model.state, model=model.name, error=model.error)
        if model.state == "ready":
            self._announce_available()
            self.tasks.spawn(self._read_speaking())
        self.tasks.spawn(self._publish_models())

    async def _read_speaking(self) -> None:
        status = await self.ask_or_log(self._worker(), worker.GetStatus(), "dictate_status_unread")
        if status is None:
            return
        self.speaking = status.speaking
        await self._publish_models()

    def owns(self, row: WorkerRow) -> bool:
        return row.name == WORKER_NAME

    def worker_restarting(self, row: WorkerRow) -> None:
        self._fail_began(row)
        if self.model.state != "pending":
            self._preflight(ModelState(state="pending", error=row.last_reason))

    def worker_failed(self, row: WorkerRow) -> None:
        self._fail_began(row)
        self._preflight(ModelState(state="failed", error=f"the worker failed: {row.last_reason}"))

    def worker_stopped(self, row: WorkerRow) -> None:
        self._fail_began(row)

    def _fail_began(self, row: WorkerRow) -> None:
        """The worker went away: every take it had begun is lost with it."""
        why = f"the dictation worker stopped mid-take ({row.last_reason}); start the take again"
        for take in self._takes:
            if take.began:
                self._fail(take, why)

    def _disconnected(self, connection: Connection) -> None:
        take = self._takes.of(connection)
        if take is not None:
            self._drop(take, "its connection closed")
        for change in self.room.leave(connection):
            self._voice_changed(change)

    async def _ask_take(
        self, take: LiveTake, request: WorkerRequest[ReplyT], doing: str, within: float
    ) -> ReplyT:
        what = "dictate_stream"
        return await self.ask(
            self._worker(), request, what=what, seat=take.seat, doing=doing, within=within
        )


def _read_results(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The bench runs a previous supervisor kept (none when the file is absent or unreadable)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        return list(document["results"]), list(document["speaking_results"])
    except (OSError, ValueError, KeyError, TypeError):
        return [], []


def install(supervisor: Supervisor, manager: WorkerManager) -> DictationService:
    """Serve dictation and voice on `supervisor`, with a dictate worker started by `manager`."""
    service = DictationService(supervisor, manager)
    service.install()
    return service
