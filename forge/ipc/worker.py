"""The worker base class: every worker kind subclasses `Worker` and is run by `run_worker`.

The base does everything but the work: connect, hello, heartbeats from the worker's own event
loop, request dispatch, bulk streams, graceful stop on `stop`, SIGTERM or SIGINT (quietly: a
worker never prints a KeyboardInterrupt traceback; the supervisor orders stops), and orphan
safety. A subclass declares `kind`, decorates request handlers with `@handles(RequestStruct)`,
and may override `setup`, `teardown` and `on_bulk`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NoReturn, TypeVar

import zmq
import zmq.asyncio

from forge import eventloop, logs
from forge.clock import SYSTEM_CLOCK, Clock
from forge.ipc import channel, lending
from forge.ipc.envelope import (
    PROTOCOL_VERSION,
    Envelope,
    MessageType,
    Payload,
    data_header,
    decode,
)
from forge.ipc.errors import ProtocolViolation, RequestFailed, WorkerConfigError
from forge.ipc.exits import CONFIG_ERROR_EXIT
from forge.ipc.messages import Reply, Request, StreamFrame
from forge.ipc.orphans import die_with_parent, parent_is
from forge.ipc.protocol import WorkerEvent, WorkerRequest, decode_request, encode_reply

ENV_CONTROL = "FORGE_IPC_CONTROL"
ENV_BULK = "FORGE_IPC_BULK"
ENV_BULK_IN = "FORGE_IPC_BULK_IN"
ENV_NAME = "FORGE_WORKER_NAME"
ENV_KIND = "FORGE_WORKER_KIND"
ENV_GENERATION = "FORGE_WORKER_GENERATION"
ENV_CONFIG = "FORGE_WORKER_CONFIG"
ENV_PARENT = "FORGE_WORKER_PARENT"
ENV_LAST_WORDS = "FORGE_WORKER_LAST_WORDS"
ENV_LEND = "FORGE_IPC_LEND"
LAST_WORDS_LIMIT = 2048
"""Bytes of last words the manager reads: a reason, not a log."""

_HANDLER_MARK = "__forge_request__"

HandlerT = TypeVar("HandlerT", bound=Callable[..., Awaitable[Any]])


@dataclass(frozen=True, slots=True)
class _HandlerMark:
    request_type: type[WorkerRequest[Any]]
    payloads: bool


def handles(
    request_type: type[WorkerRequest[Any]], *, payloads: bool = False
) -> Callable[[HandlerT], HandlerT]:
    """Mark `async def handler(self, request: RequestStruct) -> answer | Reply` as its method's.

    The base decodes the request's args into `request_type` before the handler runs (a field
    that does not decode is refused as `bad_request`, naming it); the answer, a struct or plain
    value, is encoded with msgspec. With `payloads=True` the handler is called as
    `handler(request, payloads)` with the request's raw frames (memoryviews).
    """

    def mark(handler: HandlerT) -> HandlerT:
        setattr(handler, _HANDLER_MARK, _HandlerMark(request_type, payloads))
        return handler

    return mark


@dataclass(frozen=True, slots=True)
class WorkerContext:
    """What the manager tells a worker process through its environment."""

    name: str
    kind: str
    generation: int
    control_endpoint: str
    bulk_endpoint: str
    """Worker -> supervisor frames."""
    bulk_in_endpoint: str
    """Supervisor -> worker frames: a socket of its own, so the outgoing stream's sends never
    share a socket with a pending receive (pyzmq re-polls on every send while one waits)."""
    parent_pid: int
    config: Mapping[str, Any] = field(default_factory=dict)
    last_words: str = ""
    """A file for why the worker cannot run, written before it exits with `CONFIG_ERROR_EXIT`
    (it may not have reached the manager yet): the manager puts it in the row's reason, so the
    person reads "cannot start shell '/bin/zhs'" rather than "exit code 78"."""
    lend_fd: int | None = None
    """The worker's end of its lending pair, when its kind lends (`forge.ipc.lending`)."""

    def to_environ(self) -> dict[str, str]:
        return {
            ENV_NAME: self.name,
            ENV_KIND: self.kind,
            ENV_GENERATION: str(self.generation),
            ENV_CONTROL: self.control_endpoint,
            ENV_BULK: self.bulk_endpoint,
            ENV_BULK_IN: self.bulk_in_endpoint,
            ENV_PARENT: str(self.parent_pid),
            ENV_CONFIG: json.dumps(dict(self.config)),
            ENV_LAST_WORDS: self.last_words,
            **({} if self.lend_fd is None else {ENV_LEND: str(self.lend_fd)}),
        }

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> WorkerContext:
        try:
            return cls(
                name=environ[ENV_NAME],
                kind=environ[ENV_KIND],
                generation=int(environ[ENV_GENERATION]),
                control_endpoint=environ[ENV_CONTROL],
                bulk_endpoint=environ[ENV_BULK],
                bulk_in_endpoint=environ[ENV_BULK_IN],
                parent_pid=int(environ[ENV_PARENT]),
                config=json.loads(environ.get(ENV_CONFIG) or "{}"),
                last_words=environ.get(ENV_LAST_WORDS, ""),
                lend_fd=int(environ[ENV_LEND]) if ENV_LEND in environ else None,
            )
        except (KeyError, ValueError) as error:
            raise WorkerConfigError(
                f"worker started without a manager's environment ({error}); "
                "workers are started by forge's worker manager, not by hand"
            ) from error

    @property
    def identity(self) -> bytes:
        return f"{self.kind}/{self.name}/{self.generation}".encode()


class BulkStream:
    """One outgoing stream of frames already in their final client-wire form.

    The per-frame path is kept short (a reused packer, no intermediate `Envelope`): it decides
    how many frames a second a worker can push.
    """

    def __init__(self, socket: zmq.asyncio.Socket, now: zmq.Socket[Any], stream_id: str) -> None:
        self._socket = socket
        self._now = now
        self.stream_id = stream_id
        self.seq = 0
        """Frames offered so far; the receiver sees a gap where frames were dropped."""
        self.dropped = 0
        """Frames refused because the supervisor's queue was full."""

    def offer(self, payload: Payload, meta: Any = None) -> bool:
        """Send now or drop this frame (newest is dropped): for frames a newer one replaces."""
        sent = channel.offer_now(self._now, self._next_frames(payload, meta))
        self.seq += 1
        if not sent:
            self.dropped += 1
        return sent

    def send_now(self, payload: Payload, meta: Any = None) -> bool:
        """Send if the supervisor can take it now; False leaves nothing sent and nothing counted
        (for a caller that queues the frame itself and `send`s it later, in order)."""
        if not channel.offer_now(self._now, self._next_frames(payload, meta)):
            return False
        self.seq += 1
        return True

    async def send(self, payload: Payload, meta: Any = None) -> None:
        """Send, waiting while the supervisor is full: backpressure for bytes that must all go."""
        frames = self._next_frames(payload, meta)
        self.seq += 1
        if not channel.offer_now(self._now, frames):
            await self._socket.send_multipart(frames, copy=False)

    def _next_frames(self, payload: Payload, meta: Any) -> list[Payload | zmq.Frame]:
        """The frames of the stream's next data message (`seq + 1`)."""
        return [data_header(self.stream_id, self.seq + 1, meta), channel.outgoing(payload)]

    async def end(self, reason: str = "ended") -> None:
        """Tell the supervisor this stream is over; its subscribers get their end callback."""
        self.seq += 1
        end = Envelope(MessageType.END, stream_id=self.stream_id, seq=self.seq, body=reason)
        await channel.send(self._socket, end)


class Worker:
    """Base class of every worker kind. Subclasses set `kind` and add `@handles` methods."""

    kind: ClassVar[str] = ""
    """The worker kind, checked against the manager's spec in the handshake."""
    capabilities: ClassVar[tuple[str, ...]] = ()
    """Free-form feature names announced in `hello`."""
    _handlers: ClassVar[dict[str, tuple[str, _HandlerMark]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        handlers: dict[str, tuple[str, _HandlerMark]] = {}
        for klass in reversed(cls.__mro__):
            for attribute, value in vars(klass).items():
                mark = getattr(value, _HANDLER_MARK, None)
                if isinstance(mark, _HandlerMark):
                    handlers[mark.request_type.method()] = (attribute, mark)
        cls._handlers = handlers

    def __init__(self, context: WorkerContext, clock: Clock = SYSTEM_CLOCK) -> None:
        self.context = context
        self.name = context.name
        self.generation = context.generation
        self.config: Mapping[str, Any] = context.config
        self.clock = clock
        self.protocol = PROTOCOL_VERSION
        """The IPC protocol announced in `hello`; the manager rejects any other."""
        self.log = logs.get_logger("forge.worker").bind(worker=context.name, kind=self.kind)
        self._zmq = zmq.asyncio.Context()
        self._control = channel.open_dealer(
            self._zmq, context.control_endpoint, context.identity, channel.CONTROL_HWM
        )
        self._bulk = channel.open_dealer(
            self._zmq, context.bulk_endpoint, context.identity, channel.BULK_HWM
        )
        self._bulk_in = channel.open_dealer(
            self._zmq, context.bulk_in_endpoint, context.identity, channel.BULK_HWM
        )
        self._bulk_now = channel.plain(self._bulk)
        self._lending = None if context.lend_fd is None else socket.socket(fileno=context.lend_fd)
        self._stopping = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    # --- hooks for subclasses -------------------------------------------------------------

    async def setup(self) -> None:
        """Prepare before `hello` (the worker is `starting` until it returns).

        Raise `WorkerConfigError` when the configuration cannot work: the process exits with
        `CONFIG_ERROR_EXIT` and is never restarted.
        """

    async def teardown(self) -> None:
        """Release what `setup` took; runs on a graceful stop before the process exits 0."""

    async def on_bulk(self, frame: StreamFrame) -> None:
        """A frame the supervisor sent on a bulk stream; the default ignores it."""

    async def on_bulk_end(self, stream_id: str, reason: str) -> None:
        """The supervisor ended one of its bulk streams."""

    # --- what subclasses call -------------------------------------------------------------

    async def emit(self, event: WorkerEvent, payloads: tuple[Payload, ...] = ()) -> None:
        """Send a one-way typed event on the control channel (never dropped)."""
        body = {"event": event.event_name(), "data": event.data()}
        envelope = Envelope(MessageType.EVENT, body=body, payloads=payloads)
        await channel.send(self._control, envelope)

    def stream(self, stream_id: str) -> BulkStream:
        """An outgoing bulk stream; choose per frame between `offer` (may drop) and `send`."""
        return BulkStream(self._bulk, self._bulk_now, stream_id)

    def lend(self, fd: int) -> None:
        """Lend the supervisor a duplicate of `fd` (`WorkerHandle.borrow`); before `setup`
        returns, so it is there when the supervisor hears from this generation."""
        if self._lending is None:
            raise WorkerConfigError(f"worker kind {self.kind!r} does not declare `lends`")
        lending.lend(self._lending, fd)

    def request_stop(self) -> None:
        """Begin a graceful stop (also what `stop` from the manager, SIGTERM and SIGINT do)."""
        self._stopping.set()

    def spawn(self, coroutine: Awaitable[None]) -> asyncio.Task[None]:
        """Run background work that is cancelled when the worker stops."""
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # --- the lifecycle --------------------------------------------------------------------

    def _leave_last_words(self, why: str) -> None:
        if not self.context.last_words:
            return
        try:
            Path(self.context.last_words).write_bytes(why.encode()[:LAST_WORDS_LIMIT])
        except OSError as error:
            self.log.warning("worker_last_words_unwritten", reason=str(error))

    async def serve(self) -> int:
        """Run until stopped; returns the process exit code."""
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.request_stop)
        try:
            setup = asyncio.ensure_future(self.setup())
            stopping = asyncio.ensure_future(self._stopping.wait())
            await asyncio.wait({setup, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            if not setup.done():  # SIGTERM while starting: nothing to tear down yet
                setup.cancel()
                return 0
            try:
                setup.result()
            except WorkerConfigError as error:
                self.log.error("worker_config_error", reason=str(error))
                self._leave_last_words(str(error))
                return CONFIG_ERROR_EXIT
            except Exception:
                self.log.exception("worker_setup_failed")  # then crash: the manager restarts
                raise
            interval = await self._handshake()
            if interval is None:
                return CONFIG_ERROR_EXIT
            self.spawn(self._heartbeat(interval))
            self.spawn(self._serve_control())
            self.spawn(self._serve_bulk())
            await self._stopping.wait()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self.teardown()
            return 0
        finally:
            self._control.close(linger=0)
            self._bulk.close(linger=0)
            self._bulk_in.close(linger=0)
            self._zmq.destroy(linger=0)

    async def _handshake(self) -> float | None:
        hello = {
            "protocol": self.protocol,
            "kind": self.kind,
            "pid": os.getpid(),
            "generation": self.generation,
            "capabilities": list(self.capabilities),
        }
        # First a word on bulk-in, so the supervisor's ROUTER has a route to us when it calls us
        # ready (a DEALER queues it until its connection is up).
        await channel.send(self._bulk_in, Envelope(MessageType.HELLO, body=hello))
        await channel.send(self._control, Envelope(MessageType.HELLO, body=hello))
        async for frames in channel.messages(self._control):
            envelope = decode(channel.views(frames))
            if envelope.type is MessageType.WELCOME:
                interval = float(envelope.body["heartbeat_interval"])
                self.log.info("worker_welcomed", generation=self.generation)
                return interval
            if envelope.type is MessageType.REJECT:
                self.log.error("worker_rejected", reason=str(envelope.body))
                return None
        raise ProtocolViolation("control channel closed before welcome")

    async def _heartbeat(self, interval: float) -> None:
        beat = Envelope(MessageType.HEARTBEAT)
        while True:
            if not parent_is(self.context.parent_pid):
                self.log.error("worker_orphaned", parent=self.context.parent_pid)
                os._exit(1)
            await channel.send(self._control, beat)
            await self.clock.sleep(interval)

    async def _serve_control(self) -> None:
        async for frames in channel.messages(self._control):
            try:
                envelope = decode(channel.views(frames))
            except ProtocolViolation as error:
                self.log.error("ipc_envelope_invalid", channel="control", reason=str(error))
                continue
            if envelope.type is MessageType.REQUEST:
                self.spawn(self._answer(envelope))
            elif envelope.type is MessageType.STOP:
                self.request_stop()
            else:
                self.log.warning("ipc_unexpected_message", type=envelope.type.value)

    async def _answer(self, envelope: Envelope) -> None:
        body = envelope.body if isinstance(envelope.body, dict) else {}
        method = str(body.get("method"))
        request = Request(
            method=method,
            args=body.get("args"),
            payloads=tuple(memoryview(p) for p in envelope.payloads),
            request_id=envelope.request_id,
        )
        answer: Envelope
        try:
            registered = self._handlers.get(method)
            if registered is None:
                raise RequestFailed("unknown_method", f"{self.kind} workers have no {method!r}")
            attribute, mark = registered
            typed = decode_request(mark.request_type, request.args)
            handler = getattr(self, attribute)
            result = await (handler(typed, request.payloads) if mark.payloads else handler(typed))
            reply = result if isinstance(result, Reply) else Reply(result)
            answer = Envelope(
                MessageType.REPLY,
                request_id=envelope.request_id,
                body={"result": encode_reply(reply.result)},
                payloads=reply.payloads,
            )
        except RequestFailed as refusal:
            answer = self._error(envelope, refusal.code, refusal.message)
        except Exception as error:
            self.log.exception("worker_handler_failed", method=method)
            answer = self._error(envelope, "internal", f"{type(error).__name__}: {error}")
        await channel.send(self._control, answer)

    @staticmethod
    def _error(envelope: Envelope, code: str, message: str) -> Envelope:
        body = {"code": code, "message": message}
        return Envelope(MessageType.ERROR, request_id=envelope.request_id, body=body)

    async def _serve_bulk(self) -> None:
        async with contextlib.aclosing(channel.incoming(self._bulk_in)) as arriving:
            async for frames in arriving:
                try:
                    envelope = decode(channel.views(frames))
                except ProtocolViolation as error:
                    self.log.error("ipc_envelope_invalid", channel="bulk", reason=str(error))
                    continue
                if envelope.stream_id is None:
                    continue
                if envelope.type is MessageType.DATA and envelope.payloads:
                    payload = memoryview(envelope.payloads[0])
                    await self.on_bulk(
                        StreamFrame(envelope.stream_id, envelope.seq, envelope.body, payload)
                    )
                elif envelope.type is MessageType.END:
                    await self.on_bulk_end(envelope.stream_id, str(envelope.body))


def run_worker(worker_class: type[Worker]) -> NoReturn:
    """The `__main__` of a worker module: orphan safety, logs, then serve until stopped."""
    try:
        context = WorkerContext.from_environ(os.environ)
    except WorkerConfigError as error:
        print(f"forge worker: {error}", file=sys.stderr)
        sys.exit(CONFIG_ERROR_EXIT)
    die_with_parent(context.parent_pid)
    logs.configure_from_env(process=f"{worker_class.kind}:{context.name}")
    if context.kind != worker_class.kind:
        logs.get_logger("forge.worker").error(
            "worker_kind_mismatch", expected=context.kind, actual=worker_class.kind
        )
        sys.exit(CONFIG_ERROR_EXIT)

    async def main() -> int:
        return await worker_class(context).serve()

    sys.exit(eventloop.run(main()))
