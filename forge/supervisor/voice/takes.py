"""A take on the socket, from `dictate_stream` to its end (`dictate_ended` or `dictate_failed`).

A take registers as the message is dispatched, so the kind-0 frame behind it on the same
connection always finds it. Its audio waits in the take until the worker's `Begin` answers (the
model may still be loading), then rides the take's bulk stream in 100 ms batches, each re-offered
until the worker's bulk socket takes it; `dictate_stop` asks the worker to `Finish` (it reads up
to the last frame sent, decodes the open segment and answers the shaped words) and
`dictate_cancel` drops it. Everything about a take goes to the connection that began it and
nobody else. A take stopped with `send` on an agent seat's composer becomes the agent's next
prompt through the service's `AgentDoor`.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from forge.ipc.manager import WorkerHandle, WorkerRow, WorkerState
from forge.ipc.protocol import WorkerRequest
from forge.logs import get_logger
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.seats import UnknownProject
from forge.supervisor.voice.rules import TakeBook
from forge.wire import server
from forge.wire.binary import Dictation
from forge.wire.client import DictateCancel, DictateStop, DictateStream
from forge.wire.dictate import (
    Axes,
    DictateEnded,
    DictateFailed,
    DictateLevel,
    DictateMessage,
    DictatePartial,
    DictatePhase,
    DictateStarted,
)
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat
from forge.workers.dictate import protocol as worker

if TYPE_CHECKING:
    from forge.supervisor.voice.service import VoiceService

log = get_logger(__name__)
ReplyT = TypeVar("ReplyT")

BEGIN_S = 90.0
"""A take's `Begin` may wait this long (a cold worker loads its model first)."""
FINISH_S = 120.0
"""The end of a take: the open segment's decode, and any closed ones still queued."""
BATCH_BYTES = 3200
"""Audio goes to the worker in batches of 100 ms (five 20 ms frames): a bulk send costs the same
for 640 bytes as for 3200, and the worker's levels are per 100 ms anyway. `dictate_stop` sends
what is left at once."""
PENDING_BATCHES = 600
"""Audio kept while the worker begins a take, or while its bulk socket is full (60 s of 100 ms
batches); past it audio drops."""
RETRY_S = 0.01
"""How soon audio the worker's full bulk socket refused is offered again."""
TakeEvent = worker.TakeLevel | worker.TakePhase | worker.TakePartial | worker.TakeFailed
"""What the worker says of one take as it runs."""


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


class Takes:
    """The live takes: their verbs, their audio to the worker, and how each one ends."""

    def __init__(self, service: VoiceService) -> None:
        self._service = service
        self.book: TakeBook[LiveTake] = TakeBook()
        self._numbers = itertools.count(1)

    async def stream(self, connection: Connection, message: DictateStream) -> None:
        supervisor = self._service.supervisor
        config = supervisor.loaded.config
        seat = message.key
        if not config.dictate.enabled:
            why = "dictation is off on this server ([dictate] enabled = false in forge.toml)"
            raise ClientRefusal("dictate_stream", why, seat)
        self._refuse_take(connection, seat)
        try:
            await supervisor.start_seat(seat)
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
        self.book.add(take)
        log.info("dictate_take_started", take=take.id, seat=str(seat), peer=connection.peer)
        take.send(DictateStarted(key=seat, take=take.id, surface=take.surface, options=axes))
        take.beginning = self._service.tasks.spawn(self._begin(take))

    def _refuse_take(self, connection: Connection, seat: Seat) -> None:
        why = self.book.refusal(connection, seat)
        if why is not None:
            raise ClientRefusal("dictate_stream", why, seat)

    async def _begin(self, take: LiveTake) -> None:
        axes = worker.Axes(take.axes.styling, take.axes.structure, take.axes.context)
        begin = worker.Begin(take=take.id, axes=axes)
        try:
            await self._ask(take, begin, "the take could not begin", BEGIN_S)
        except ClientRefusal as refusal:
            self._fail(take, refusal.why)
            return
        if self.book.get(take.id) is not take:
            self._forget_in_worker(take)
            return
        take.began = True
        pending, take.pending = take.pending or [], None
        for samples in pending:
            self._forward(take, samples)

    async def audio(self, connection: Connection, frame: Dictation) -> None:
        take = self.book.of(connection)
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
        handle = self._service.worker()
        stream = worker.audio_stream(take.id)
        while take.outbox:
            if not handle.send_bulk(stream, take.outbox[0], meta=take.frames + 1):
                if take.retry is None:
                    take.retry = self._service.tasks.spawn(self._retry(take))
                take.drained.clear()
                return
            take.outbox.popleft()
            take.frames += 1
        take.drained.set()

    async def _retry(self, take: LiveTake) -> None:
        await self._service.supervisor.clock.sleep(RETRY_S)
        take.retry = None
        if self.book.get(take.id) is take:
            self._drain(take)
        else:
            take.drained.set()

    async def stop(self, connection: Connection, message: DictateStop) -> None:
        take = self._own(connection, message.key, "dictate_stop")
        if message.send:
            self._refuse_send(take)
        self._send_batch(take)
        take.stopping = True
        take.as_prompt = message.send
        self._service.tasks.spawn(self._finish(take))

    def _refuse_send(self, take: LiveTake) -> None:
        """Refuse `send` (before the take stops) unless its words can become a prompt."""
        if take.surface != "composer":
            why = (
                "send lands the words as a prompt: it needs a take begun on the composer "
                f"surface, not {take.surface}"
            )
            raise ClientRefusal("dictate_stop", why, take.seat)
        agents = self._service.agents
        if agents is None or not agents.has_agent(take.seat):
            why = (
                f"seat {take.seat} has no agent to send the words to "
                "(spawn one, or stop without send)"
            )
            raise ClientRefusal("dictate_stop", why, take.seat)

    async def _finish(self, take: LiveTake) -> None:
        if take.beginning is not None:
            await asyncio.gather(take.beginning, return_exceptions=True)
        await take.drained.wait()
        if self.book.get(take.id) is not take:
            return
        request = worker.Finish(take=take.id, frames=take.frames)
        try:
            finished = await self._ask(take, request, "the take could not be transcribed", FINISH_S)
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
        agents = self._service.agents
        if not text.strip() or agents is None:
            return None
        try:
            return await agents.dictated(take.seat, text)
        except ClientRefusal as refusal:
            take.connection.send(server.Error(what="dictate_stop", why=refusal.why, seat=take.seat))
            return None

    async def cancel(self, connection: Connection, message: DictateCancel) -> None:
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
        take = self.book.of(connection)
        if take is None or take.seat != seat:
            raise ClientRefusal(what, f"this connection has no live take on seat {seat}", seat)
        if take.stopping:
            raise ClientRefusal(what, f"the take on seat {seat} is already being transcribed", seat)
        return take

    def heard(self, event: TakeEvent) -> None:
        """What the worker said of a take as it runs, to the take's connection."""
        take = self.book.get(event.take)
        if take is None:
            return
        if isinstance(event, worker.TakeLevel):
            take.send(DictateLevel(key=take.seat, take=take.id, rms=event.rms))
        elif isinstance(event, worker.TakePhase):
            take.send(DictatePhase(key=take.seat, take=take.id, phase=event.phase))
        elif isinstance(event, worker.TakePartial):
            take.send(DictatePartial(key=take.seat, take=take.id, text=event.text))
        else:
            self._fail(take, event.why)

    def _end(self, take: LiveTake) -> bool:
        """Forget `take` and end its audio stream to the worker; False when it was not live."""
        if not self.book.remove(take):
            return False
        if self._service.handle is not None:
            self._service.handle.end_bulk(worker.audio_stream(take.id))
        return True

    def _drop(self, take: LiveTake, reason: str) -> None:
        """The take ends with nothing landing; the worker forgets it."""
        take.drained.set()
        if not self._end(take):
            return
        log.info("dictate_take_dropped", take=take.id, seat=str(take.seat), reason=reason)
        self._forget_in_worker(take)

    def _forget_in_worker(self, take: LiveTake) -> None:
        handle = self._service.handle
        if handle is not None and handle.state is WorkerState.READY:
            self._service.tasks.spawn(self._cancel_in_worker(handle, take.id))

    async def _cancel_in_worker(self, handle: WorkerHandle, take: int) -> None:
        await self._service.tell(
            handle, worker.Cancel(take=take), "dictate_cancel_unsent", expected=True, take=take
        )

    def _fail(self, take: LiveTake, why: str) -> None:
        take.drained.set()
        if not self._end(take):
            return
        log.warning("dictate_take_failed", take=take.id, seat=str(take.seat), why=why)
        take.send(DictateFailed(key=take.seat, take=take.id, surface=take.surface, why=why))

    def fail_began(self, row: WorkerRow) -> None:
        """The worker went away: every take it had begun is lost with it."""
        why = f"the dictation worker stopped mid-take ({row.last_reason}); start the take again"
        for take in self.book:
            if take.began:
                self._fail(take, why)

    def left(self, connection: Connection) -> None:
        """A closed connection drops its take: the worker forgets it, nothing lands."""
        take = self.book.of(connection)
        if take is not None:
            self._drop(take, "its connection closed")

    async def _ask(
        self, take: LiveTake, request: WorkerRequest[ReplyT], doing: str, within: float
    ) -> ReplyT:
        return await self._service.ask(
            self._service.worker(),
            request,
            what="dictate_stream",
            seat=take.seat,
            doing=doing,
            within=within,
        )
