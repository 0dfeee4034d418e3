"""The worker manager: the lifecycle policy every worker kind shares, above the launcher.

For each worker the manager binds its control and bulk ROUTERs in a private 0700 directory,
spawns the process (`launcher.launch`), and then applies the policy: `starting` until a valid
`hello`, `ready` while heartbeats arrive, SIGTERM then SIGKILL of the process group when they
stop (or no hello comes), and after an exit nobody asked for, the `RestartPolicy`'s decision:
`restarting` after a backoff, or `failed`. A death answers every pending request at once with a
typed error and ends every stream the worker served, so callers can send their client-facing end.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any

import zmq
import zmq.asyncio

from forge import logs, paths
from forge.clock import SYSTEM_CLOCK, Clock
from forge.filemodes import private_dir
from forge.ipc import channel, lending
from forge.ipc.envelope import (
    PROTOCOL_VERSION,
    Envelope,
    MessageType,
    Payload,
    data_header,
    decode,
)
from forge.ipc.errors import (
    ProtocolViolation,
    RequestFailed,
    RequestTimeout,
    WorkerCrashed,
    WorkerError,
    WorkerUnavailable,
)
from forge.ipc.exits import ExitStatus
from forge.ipc.launcher import WorkerProcess, launch
from forge.ipc.messages import Reply, StreamFrame
from forge.ipc.pending import PendingRequests
from forge.ipc.policy import GiveUp, LifecycleTimings, RestartPolicy
from forge.ipc.streams import OnEnd, OnFrame, StreamRegistry, Subscription
from forge.ipc.worker import LAST_WORDS_LIMIT, WorkerContext

log = logs.get_logger("forge.ipc")

MAX_IPC_PATH = 100
"""ipc:// paths are Unix socket paths, limited to 107 bytes; beyond this we use the temp dir."""


class WorkerState(StrEnum):
    STARTING = "starting"
    READY = "ready"
    RESTARTING = "restarting"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class WorkerRow:
    """What a person sees of a worker (home's `workers` field, `forge status`)."""

    name: str
    kind: str
    pid: int | None
    state: WorkerState
    restarts: int
    last_exit: int | str | None
    """The last exit code, or the name of the signal that killed it."""
    last_reason: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "pid": self.pid,
            "state": self.state.value,
            "restarts": self.restarts,
            "last_exit": self.last_exit,
            "last_reason": self.last_reason,
        }


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """How to start one worker: `python -m <module>`, whose `__main__` calls `run_worker`."""

    name: str
    kind: str
    module: str
    config: Mapping[str, Any] = field(default_factory=dict)
    """JSON-able settings, read by the worker as `self.config`."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment variables on top of the supervisor's own."""
    cwd: Path | None = None
    timings: LifecycleTimings | None = None
    """This worker's own timings (a slow Chromium start's `hello_timeout`), else the manager's."""
    restart: bool = True
    """False for a worker whose death its owner handles (a terminal host: its shell is gone with
    it): an exit nobody asked for leaves it `stopped`, logged `worker_exited_not_restarted`."""
    lends: bool = False
    """Each generation gets a lending pair (`forge.ipc.lending`); `WorkerHandle.borrow` reads it."""


@dataclass(frozen=True, slots=True)
class WorkerEvent:
    """A one-way event a worker emitted."""

    worker: str
    event: str
    data: Any
    payloads: tuple[memoryview, ...] = ()


OnChange = Callable[[WorkerRow], None]
OnEvent = Callable[[WorkerEvent], None]
Unsubscribe = Callable[[], None]


class WorkerHandle:
    """One supervised worker across all its generations; what callers hold."""

    def __init__(self, manager: WorkerManager, spec: WorkerSpec, slot: int) -> None:
        self.spec = spec
        self.name = spec.name
        self.kind = spec.kind
        self._manager = manager
        self._clock = manager.clock
        self._timings = spec.timings or manager.timings
        self._policy = RestartPolicy(self._timings, manager.rng)
        self._log = log.bind(worker=spec.name, kind=spec.kind)
        base = manager.directory / str(slot)
        self._control = channel.open_router(
            manager.zmq, base.with_suffix(".ctl"), channel.CONTROL_HWM
        )
        self._bulk = channel.open_router(manager.zmq, base.with_suffix(".bulk"), channel.BULK_HWM)
        self._bulk_in = channel.open_router(manager.zmq, base.with_suffix(".in"), channel.BULK_HWM)
        self._bulk_in_now = channel.plain(self._bulk_in)
        self._control_now = channel.plain(self._control)
        self._endpoints = (f"ipc://{base}.ctl", f"ipc://{base}.bulk", f"ipc://{base}.in")
        self._last_words = base.with_suffix(".why")
        self._pending = PendingRequests(spec.name, self._clock)
        self._streams = StreamRegistry()
        self._bulk_seq: dict[str, int] = {}
        self._event_listeners: list[OnEvent] = []
        self._waiters: list[tuple[Callable[[WorkerRow], bool], asyncio.Future[WorkerRow]]] = []
        self._stop_requested = asyncio.get_running_loop().create_future()
        self.generation = 0
        self.capabilities: tuple[str, ...] = ()
        """What the current generation announced in its hello."""
        self._identity: bytes | None = None
        self._process: WorkerProcess | None = None
        self._lending: socket.socket | None = None
        """The current generation's end of its lending pair (a kind that `lends`)."""
        self._spawned_at = 0.0
        self._last_seen = 0.0
        self._ready_at: float | None = None
        self._hello: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        """Resolved when the current generation is ready (welcomed, bulk-in attached)."""
        self._welcomed = False
        self._attached: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._attaching: asyncio.Future[None] = self._attached
        self._kill_reason: str | None = None
        self._state = WorkerState.STARTING
        self._restarts = 0
        self._last_exit: int | str | None = None
        self._last_reason: str | None = None
        self._tasks = [asyncio.ensure_future(self._receive_control())]
        self._bulk_pump = channel.MessagePump(self._bulk, self._receive_bulk)
        self._supervisor = asyncio.ensure_future(self._supervise())

    # --- what callers use -----------------------------------------------------------------

    @property
    def row(self) -> WorkerRow:
        running = self._process is not None and not self._process.exited.done()
        return WorkerRow(
            name=self.name,
            kind=self.kind,
            pid=self._process.pid if running and self._process else None,
            state=self._state,
            restarts=self._restarts,
            last_exit=self._last_exit,
            last_reason=self._last_reason,
        )

    @property
    def state(self) -> WorkerState:
        return self._state

    @property
    def pid(self) -> int | None:
        return self.row.pid

    async def request(
        self,
        method: str,
        args: Any = None,
        *,
        payloads: tuple[Payload, ...] = (),
        within: float | None = None,
    ) -> Reply:
        """Ask the worker; waits for `ready` within the same deadline.

        `within` is the deadline in seconds (default `LifecycleTimings.request_timeout`).
        Raises `RequestFailed` (the handler's refusal), `RequestTimeout`, `WorkerCrashed` or
        `WorkerUnavailable`. The reply's payloads are views of the received frames.
        """
        seconds = self._timings.request_timeout if within is None else within
        deadline = self._clock.monotonic() + seconds
        if self._state is not WorkerState.READY:
            await self._wait_ready(seconds)
        remaining = max(deadline - self._clock.monotonic(), 0.0)
        request_id, answer = self._pending.open(remaining)
        body = {"method": method, "args": args}
        envelope = Envelope(
            MessageType.REQUEST, request_id=request_id, body=body, payloads=payloads
        )
        sending = channel.start_send(self._control, envelope, self._identity)
        sending.add_done_callback(partial(self._request_sent, request_id))
        try:
            return await answer
        finally:
            if not sending.done():
                sending.cancel()
            self._pending.forget(request_id)

    def borrow(self) -> int | None:
        """The next descriptor the current generation lent (`Worker.lend`), now owned by the
        caller; None when it lent nothing more (or its kind does not lend)."""
        return None if self._lending is None else lending.borrow(self._lending)

    def subscribe(self, stream_id: str | None, on_frame: OnFrame, on_end: OnEnd) -> Subscription:
        """Receive a bulk stream's frames (`None`: every stream) and learn when it ends."""
        return self._streams.subscribe(stream_id, on_frame, on_end)

    def on_event(self, callback: OnEvent) -> Unsubscribe:
        """Receive every event this worker emits, across restarts."""
        self._event_listeners.append(callback)
        return partial(self._event_listeners.remove, callback)

    def send_bulk(self, stream_id: str, payload: Payload, meta: Any = None) -> bool:
        """Offer a bulk frame to the worker; False (dropped) when it is full or not connected."""
        seq = self._bulk_seq.get(stream_id, 0) + 1
        self._bulk_seq[stream_id] = seq
        if self._identity is None:
            return False
        header = data_header(stream_id, seq, meta)
        frames = [self._identity, header, channel.outgoing(payload)]
        return channel.offer_now(self._bulk_in_now, frames)

    def end_bulk(self, stream_id: str, reason: str = "ended") -> None:
        """No more frames on `stream_id`: the worker is told (`on_bulk_end`) if it can take it
        now, and the stream's count is forgotten (a stream per dictation take must not leave
        one behind for the supervisor's lifetime); a stream of the same name counts from 1."""
        self._bulk_seq.pop(stream_id, None)
        if self._identity is None:
            return
        envelope = Envelope(MessageType.END, stream_id=stream_id, body=reason)
        channel.offer_now(self._bulk_in_now, channel.frames_for(envelope, self._identity))

    async def wait_for(
        self, predicate: Callable[[WorkerRow], bool], within: float | None = None
    ) -> WorkerRow:
        """The first row (now or after a change) for which `predicate` holds."""
        row = self.row
        if predicate(row):
            return row
        waiter: asyncio.Future[WorkerRow] = asyncio.get_running_loop().create_future()
        entry = (predicate, waiter)
        self._waiters.append(entry)
        timer = None if within is None else asyncio.ensure_future(self._expire(waiter, within))
        try:
            return await waiter
        finally:
            self._waiters.remove(entry)
            if timer is not None:
                timer.cancel()

    async def stop(self) -> None:
        """Stop gracefully (`stop`, then SIGTERM, then SIGKILL of the group); state `stopped`."""
        if not self._stop_requested.done():
            self._stop_requested.set_result(None)
        process = self._process
        if process is not None and not process.exited.done():
            asked = self._identity is not None and channel.offer(
                self._control, Envelope(MessageType.STOP), self._identity
            )
            if not (asked and await self._within(process.exited, self._timings.stop_timeout)):
                await self._terminate(process, "did not stop when asked")
        await self._supervisor

    # --- supervision ----------------------------------------------------------------------

    async def _supervise(self) -> None:
        while True:
            try:
                process = self._spawn()
            except OSError as error:
                self._last_reason = f"could not start {self.spec.module}: {error}"
                self._log.error("worker_failed", reason=self._last_reason)
                self._set_state(WorkerState.FAILED)
                return
            watchdog = asyncio.ensure_future(self._watchdog(process, self._hello))
            status = await process.exited
            watchdog.cancel()
            ready_for = self._on_exit(process, status)
            if self._stop_requested.done() or not self.spec.restart:
                self._set_state(WorkerState.STOPPED)
                return
            decision = self._policy.after_exit(self._clock.monotonic(), status, ready_for)
            if isinstance(decision, GiveUp):
                self._last_reason = self._combine(decision.reason)
                self._log.error("worker_failed", reason=self._last_reason)
                self._set_state(WorkerState.FAILED)
                return
            self._restarts += 1
            self._log.warning(
                "worker_restart_scheduled", delay=decision.delay, reason=decision.reason
            )
            self._set_state(WorkerState.RESTARTING)
            if await self._within(self._stop_requested, decision.delay):
                self._set_state(WorkerState.STOPPED)
                return

    def _spawn(self) -> WorkerProcess:
        self.generation += 1
        context = WorkerContext(
            name=self.name,
            kind=self.kind,
            generation=self.generation,
            control_endpoint=self._endpoints[0],
            bulk_endpoint=self._endpoints[1],
            bulk_in_endpoint=self._endpoints[2],
            parent_pid=os.getpid(),
            config=self.spec.config,
            last_words=str(self._last_words),
        )
        theirs = None
        if self.spec.lends:
            self._lending, theirs = lending.lending_pair()
            context = replace(context, lend_fd=theirs.fileno())
        self._identity = context.identity
        self._ready_at = None
        self._hello = asyncio.get_running_loop().create_future()
        self._welcomed = False
        self._attached = asyncio.get_running_loop().create_future()
        self._attaching = asyncio.ensure_future(
            self._await_attach(context.identity, self._attached)
        )
        self._kill_reason = None
        self._spawned_at = self._clock.monotonic()
        env = {**os.environ, **self.spec.env, **context.to_environ()}
        argv = [sys.executable, "-m", self.spec.module]
        passed = () if theirs is None else (theirs.fileno(),)
        try:
            self._process = launch(argv, env, cwd=self.spec.cwd, pass_fds=passed)
        except OSError:
            self._close_lending()
            raise
        finally:
            if theirs is not None:
                theirs.close()  # the worker holds its own copy now
        self._log.info("worker_spawned", pid=self._process.pid, generation=self.generation)
        self._set_state(WorkerState.STARTING)
        return self._process

    async def _watchdog(self, process: WorkerProcess, hello: asyncio.Future[None]) -> None:
        """SIGTERM then SIGKILL a worker that never says hello or stops sending heartbeats."""
        t = self._timings
        if not await self._within(hello, t.hello_timeout):
            why = f"no hello within {t.hello_timeout:g} s"
        else:
            await self._silence(t.hang_after)
            why = f"hung: no heartbeat for {t.hang_after:g} s"
        self._log.error("worker_hang", pid=process.pid, reason=why)
        await self._terminate(process, why)

    async def _silence(self, bound: float) -> None:
        """Return once the worker has sent nothing for `bound` seconds. Silence is judged on
        what was received, so while messages wait unread in the control socket the supervisor
        is the one behind (its loop stalled: a long synchronous step, a starved machine), not
        the worker: they are read first, and they may be its heartbeats."""
        while True:
            wait = self._last_seen + bound - self._clock.monotonic()
            if wait > 0:
                await self._clock.sleep(wait)
            elif channel.queued(self._control_now):
                await asyncio.sleep(0)  # the control reader's turn
            else:
                return

    async def _terminate(self, process: WorkerProcess, why: str) -> None:
        self._kill_reason = why
        process.signal_group(signal.SIGTERM)
        process.signal_group(signal.SIGCONT)  # a stopped worker handles SIGTERM only once resumed
        if not await self._within(process.exited, self._timings.kill_grace):
            process.kill_group()
            await process.exited

    def _on_exit(self, process: WorkerProcess, status: ExitStatus) -> float | None:
        """Answer everyone waiting on the dead generation; returns how long it had been ready."""
        process.kill_group()  # children it left in its group die with it
        self._attaching.cancel()
        self._close_lending()
        stopping = self._stop_requested.done()
        self._identity = None
        if (words := self._take_last_words()) is not None:
            self._kill_reason = self._combine(words)
        self._last_exit = status.wire()
        self._last_reason = self._combine(status.describe())
        reason = "worker_stopped" if stopping else "worker_crashed"
        error: type[WorkerError] = WorkerUnavailable if stopping else WorkerCrashed
        message = f"{'stopped' if stopping else 'died'} ({self._last_reason})"
        failed = self._pending.fail_all(lambda: error(self.name, message))
        ended = self._streams.end_all(reason)
        if stopping:
            record = "worker_stopped"
        else:
            record = "worker_exited" if self.spec.restart else "worker_exited_not_restarted"
        self._log.log(
            20 if stopping else 40,
            record,
            pid=process.pid,
            exit=self._last_exit,
            reason=self._last_reason,
            failed_requests=failed,
            ended_streams=ended,
        )
        now = self._clock.monotonic()
        return None if self._ready_at is None else now - self._ready_at

    def _close_lending(self) -> None:
        """The generation is over: its lending pair goes, with what it lent and nobody borrowed."""
        if self._lending is not None:
            self._lending.close()
            self._lending = None

    def _take_last_words(self) -> str | None:
        """Why the generation that just ended could not run, if it said (`WorkerContext`)."""
        try:
            with self._last_words.open("rb") as file:
                words = file.read(LAST_WORDS_LIMIT)
        except FileNotFoundError:
            return None
        self._last_words.unlink(missing_ok=True)
        return words.decode(errors="replace").strip() or None

    def _combine(self, cause: str) -> str:
        return cause if self._kill_reason is None else f"{self._kill_reason}; {cause}"

    # --- receiving ------------------------------------------------------------------------

    async def _receive_control(self) -> None:
        async for frames in channel.messages(self._control):
            try:
                self._dispatch_control(frames)
            except Exception:  # a listener's bug must not end this worker's channel
                self._log.exception("ipc_dispatch_failed", channel="control")

    def _dispatch_control(self, frames: list[zmq.Frame]) -> None:
        if frames[0].bytes != self._identity:
            return  # a previous generation's last words
        try:
            envelope = decode(channel.views(frames[1:]))
        except ProtocolViolation as error:
            self._log.error("ipc_envelope_invalid", channel="control", reason=str(error))
            return
        self._last_seen = self._clock.monotonic()
        kind = envelope.type
        if kind is MessageType.HELLO:
            self._on_hello(envelope)
        elif kind is MessageType.REPLY:
            body = envelope.body if isinstance(envelope.body, dict) else {}
            reply = Reply(body.get("result"), tuple(map(memoryview, envelope.payloads)))
            self._pending.resolve(envelope.request_id, reply)
        elif kind is MessageType.ERROR:
            body = envelope.body if isinstance(envelope.body, dict) else {}
            refusal = RequestFailed(str(body.get("code")), str(body.get("message")))
            self._pending.fail(envelope.request_id, refusal)
        elif kind is MessageType.EVENT:
            self._on_event(envelope)

    def _on_hello(self, envelope: Envelope) -> None:
        if self._welcomed:
            self._log.warning("ipc_duplicate_hello", generation=self.generation)
            return
        body = envelope.body if isinstance(envelope.body, dict) else {}
        reason = self._refusal(envelope.version, body)
        if reason is not None:
            self._kill_reason = f"rejected: {reason}"
            self._log.error("ipc_protocol_rejected", reason=reason, hello=body)
            channel.offer(self._control, Envelope(MessageType.REJECT, body=reason), self._identity)
            return
        welcome = Envelope(
            MessageType.WELCOME, body={"heartbeat_interval": self._timings.heartbeat_interval}
        )
        if not channel.offer(self._control, welcome, self._identity):
            self._log.error("ipc_welcome_undelivered", generation=self.generation)
            return
        self._welcomed = True
        self.capabilities = tuple(str(c) for c in body.get("capabilities", ()))
        generation = self.generation
        self._attached.add_done_callback(lambda _: self._ready(generation, body.get("pid")))

    def _ready(self, generation: int, pid: object) -> None:
        """Welcomed and its bulk-in socket attached (so `send_bulk` can reach it): ready.

        Not once the watchdog has begun killing it: a hello that lands inside the kill grace
        would show a dying worker as ready and let requests in to be failed a moment later."""
        if generation != self.generation or self._identity is None or self._hello.done():
            return
        if self._kill_reason is not None:
            self._log.info("worker_ready_too_late", pid=pid, reason=self._kill_reason)
            return
        self._ready_at = self._clock.monotonic()
        self._hello.set_result(None)
        self._log.info("worker_ready", pid=pid, generation=generation)
        self._set_state(WorkerState.READY)

    async def _await_attach(self, identity: bytes, attached: asyncio.Future[None]) -> None:
        """Read the bulk-in socket until this generation's first message: its route exists.

        Only until then: a receive left pending there would tax every `send_bulk`."""
        while True:
            frames = await self._bulk_in.recv_multipart(copy=False)
            if frames[0].bytes == identity:
                attached.set_result(None)
                return

    def _refusal(self, version: int, hello: dict[str, Any]) -> str | None:
        protocol = hello.get("protocol")
        if version != PROTOCOL_VERSION or protocol != PROTOCOL_VERSION:
            return f"protocol {protocol} (envelope {version}) is not {PROTOCOL_VERSION}"
        if hello.get("kind") != self.kind:
            return f"kind {hello.get('kind')!r} is not {self.kind!r}"
        if hello.get("generation") != self.generation:
            return f"generation {hello.get('generation')} is not {self.generation}"
        if self._process is None or hello.get("pid") != self._process.pid:
            return f"pid {hello.get('pid')} is not the spawned process"
        return None

    def _on_event(self, envelope: Envelope) -> None:
        body = envelope.body if isinstance(envelope.body, dict) else {}
        event = WorkerEvent(
            self.name,
            str(body.get("event")),
            body.get("data"),
            tuple(map(memoryview, envelope.payloads)),
        )
        for listener in list(self._event_listeners):
            try:
                listener(event)
            except Exception:
                self._log.exception("event_listener_failed", name=event.event)

    def _receive_bulk(self, frames: list[zmq.Frame]) -> None:
        try:
            self._dispatch_bulk(frames)
        except Exception:  # a subscriber's bug must not end this worker's streams
            self._log.exception("ipc_dispatch_failed", channel="bulk")

    def _dispatch_bulk(self, frames: list[zmq.Frame]) -> None:
        if frames[0].bytes != self._identity:
            return
        try:
            envelope = decode(channel.views(frames[1:]))
        except ProtocolViolation as error:
            self._log.error("ipc_envelope_invalid", channel="bulk", reason=str(error))
            return
        stream_id = envelope.stream_id
        if stream_id is None:
            return
        if envelope.type is MessageType.DATA and envelope.payloads:
            payload = envelope.payloads[0]
            assert isinstance(payload, memoryview)
            self._streams.deliver(StreamFrame(stream_id, envelope.seq, envelope.body, payload))
        elif envelope.type is MessageType.END:
            self._streams.end(stream_id, str(envelope.body))

    # --- small helpers --------------------------------------------------------------------

    def _request_sent(self, request_id: int, sending: asyncio.Future[Any]) -> None:
        if sending.cancelled() or sending.exception() is None:
            return
        error = sending.exception()
        self._pending.fail(request_id, WorkerCrashed(self.name, f"request not delivered: {error}"))

    async def _wait_ready(self, seconds: float) -> None:
        settled = (WorkerState.READY, WorkerState.FAILED, WorkerState.STOPPED)
        row = await self.wait_for(lambda r: r.state in settled, seconds)
        if row.state is not WorkerState.READY or self._stop_requested.done():
            raise WorkerUnavailable(self.name, f"{row.state.value}: {row.last_reason}")

    async def _expire(self, waiter: asyncio.Future[WorkerRow], seconds: float) -> None:
        await self._clock.sleep(seconds)
        if not waiter.done():
            state = self._state.value
            waiter.set_exception(RequestTimeout(self.name, f"still {state} after {seconds:g} s"))

    async def _within(self, future: asyncio.Future[Any], seconds: float) -> bool:
        """Wait for `future` at most `seconds` on the clock; True if it finished."""
        if not future.done():
            sleeper = asyncio.ensure_future(self._clock.sleep(seconds))
            await asyncio.wait({future, sleeper}, return_when=asyncio.FIRST_COMPLETED)
            sleeper.cancel()
        return future.done()

    def _set_state(self, state: WorkerState) -> None:
        self._state = state
        row = self.row
        for predicate, waiter in list(self._waiters):
            if not waiter.done() and predicate(row):
                waiter.set_result(row)
        self._manager._changed(row)

    async def _close(self) -> None:
        tasks = [*self._tasks, self._supervisor, self._attaching]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._bulk_pump.close()
        self._control.close(linger=0)
        self._bulk.close(linger=0)
        self._bulk_in.close(linger=0)


class WorkerManager:
    """Owns every worker of one supervisor (or `forge evaluate`) process.

    Use as `async with WorkerManager() as manager:`; leaving it stops every worker and its group.
    """

    def __init__(
        self,
        *,
        timings: LifecycleTimings | None = None,
        clock: Clock = SYSTEM_CLOCK,
        runtime_dir: Path | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.timings = timings or LifecycleTimings()
        self.clock = clock
        self.rng = rng or random.Random()
        self.directory = _private_directory(runtime_dir or paths.runtime_dir())
        self.zmq = zmq.asyncio.Context()
        self._workers: dict[str, WorkerHandle] = {}
        self._slots = itertools.count()
        self._listeners: list[OnChange] = []

    async def __aenter__(self) -> WorkerManager:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def start(self, spec: WorkerSpec) -> WorkerHandle:
        """Bind the worker's sockets, spawn it, and return its handle (state `starting`)."""
        if spec.name in self._workers:
            raise ValueError(f"a worker named {spec.name!r} already exists")
        handle = WorkerHandle(self, spec, next(self._slots))
        self._workers[spec.name] = handle
        return handle

    def worker(self, name: str) -> WorkerHandle:
        return self._workers[name]

    def rows(self) -> list[WorkerRow]:
        """Every worker's row, in the order they were started."""
        return [handle.row for handle in self._workers.values()]

    def on_change(self, callback: OnChange) -> Unsubscribe:
        """Call `callback(row)` whenever a worker's row changes."""
        self._listeners.append(callback)
        return partial(self._listeners.remove, callback)

    async def stop(self, name: str) -> None:
        """Stop a worker and keep its row (state `stopped`)."""
        await self._workers[name].stop()

    async def remove(self, name: str) -> None:
        """Stop a worker, release its sockets and drop its row (a closed terminal, an idle
        browser profile): `rows()` no longer lists it, and listeners hear its last row."""
        handle = self._workers[name]
        await handle.stop()
        await handle._close()
        del self._workers[name]
        self._changed(handle.row)

    async def close(self) -> None:
        """Stop every worker (in parallel), then release the sockets and the runtime directory."""
        handles = list(self._workers.values())
        await asyncio.gather(*(handle.stop() for handle in handles))
        for handle in handles:
            await handle._close()
        self._workers.clear()
        # destroy, not term: term blocks in C, beyond any timeout, while a socket some caller
        # forgot is still open; the manager owns this context, so closing the rest is safe.
        self.zmq.destroy(linger=0)
        shutil.rmtree(self.directory, ignore_errors=True)

    def _changed(self, row: WorkerRow) -> None:
        for listener in list(self._listeners):
            try:
                listener(row)
            except Exception:
                log.exception("worker_listener_failed", worker=row.name)


def _private_directory(runtime_dir: Path) -> Path:
    """A fresh 0700 directory for the sockets, short enough for ipc:// paths, in a runtime
    folder of our own (`private_dir`)."""
    private_dir(runtime_dir)
    directory = Path(tempfile.mkdtemp(prefix="ipc-", dir=runtime_dir))
    if len(str(directory)) + len("/999.bulk") > MAX_IPC_PATH:
        directory.rmdir()
        directory = Path(tempfile.mkdtemp(prefix="forge-ipc-"))
    return directory
