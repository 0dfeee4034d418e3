"""ZeroMQ sockets with the options the lifecycle relies on, and the two ways of sending.

Each worker has three socket pairs, so a heartbeat never queues behind bulk frames: *control*
(handshake, heartbeats, requests, replies, events; never dropped), *bulk* (worker -> supervisor
stream frames) and *bulk in* (supervisor -> worker); bulk frames are dropped by the sender's
policy when the peer is full. The supervisor binds a ROUTER for each before it spawns the
worker; the worker connects a DEALER whose identity names its generation.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, cast

import zmq
import zmq.asyncio

from forge.ipc.envelope import COPY_THRESHOLD, Envelope, Payload, encode

CONTROL_HWM = 10_000
"""Queued control messages per peer; reaching it makes a sender wait (never drop)."""

BULK_HWM = 128
"""Queued bulk frames per direction; reaching it is a drop-policy decision for the stream."""

_POLLIN = int(zmq.POLLIN)
"""As a plain int: `zmq.POLLIN` is an enum member, and `&` with one costs a microsecond."""

YIELD_EVERY = 64
"""A receive loop gives the event loop a turn after this many ready messages, so a flooding
peer cannot starve the other workers' loops (a ready socket never suspends an `await`)."""
YIELD_BYTES = 1024 * 1024
"""...or after this many bytes of them: 64 terminal or tab frames can be 4 MiB, and handing
that much on in one turn held the supervisor's loop (and every ping) for 100-200 ms under load."""


def _socket(context: zmq.asyncio.Context, kind: int, hwm: int) -> zmq.asyncio.Socket:
    socket = context.socket(kind)
    socket.setsockopt(zmq.LINGER, 0)
    socket.setsockopt(zmq.SNDHWM, hwm)
    socket.setsockopt(zmq.RCVHWM, hwm)
    return socket


def outgoing(payload: Payload) -> Payload | zmq.Frame:
    """A payload as ZeroMQ should take it: zero-copy from `COPY_THRESHOLD` up, copied below.

    Explicit, because the asyncio socket's own `copy_threshold` is not the one its sends read.
    """
    if len(payload) >= COPY_THRESHOLD:
        return zmq.Frame(payload, copy=False)
    return payload


def open_router(context: zmq.asyncio.Context, path: Path, hwm: int) -> zmq.asyncio.Socket:
    """Bind the supervisor's side; an unknown peer raises EHOSTUNREACH instead of vanishing."""
    socket = _socket(context, zmq.ROUTER, hwm)
    socket.setsockopt(zmq.ROUTER_MANDATORY, 1)
    socket.bind(f"ipc://{path}")
    return socket


def open_dealer(
    context: zmq.asyncio.Context, endpoint: str, identity: bytes, hwm: int
) -> zmq.asyncio.Socket:
    """Connect the worker's side under `identity` (kind/name/generation)."""
    socket = _socket(context, zmq.DEALER, hwm)
    socket.setsockopt(zmq.IDENTITY, identity)
    socket.connect(endpoint)
    return socket


def frames_for(envelope: Envelope, identity: bytes | None = None) -> list[Payload | zmq.Frame]:
    header, *payloads = encode(envelope)
    frames = [header, *map(outgoing, payloads)]
    return frames if identity is None else [identity, *frames]


def start_send(
    socket: zmq.asyncio.Socket, envelope: Envelope, identity: bytes | None = None, flags: int = 0
) -> asyncio.Future[Any]:
    """Queue a send; the future resolves once ZeroMQ took the message (or with its error)."""
    future = socket.send_multipart(frames_for(envelope, identity), flags=flags, copy=False)
    return cast("asyncio.Future[Any]", future)


async def send(
    socket: zmq.asyncio.Socket, envelope: Envelope, identity: bytes | None = None
) -> None:
    """Send, waiting while the peer is full: for control messages, which are never dropped."""
    await start_send(socket, envelope, identity)


def offer(socket: zmq.asyncio.Socket, envelope: Envelope, identity: bytes | None = None) -> bool:
    """Send only if the peer can take it now; False means the caller's drop policy applies.

    ZeroMQ queues a multipart message whole or not at all, so a refusal never splits one.
    """
    sending = socket.send_multipart(frames_for(envelope, identity), flags=zmq.DONTWAIT, copy=False)
    future = cast("asyncio.Future[Any]", sending)
    if not future.done():
        # Queued behind a `send` still waiting for room: the peer is full, so refuse now
        # (left queued, it could be refused later with nobody told).
        future.cancel()
        return False
    error = future.exception()
    if error is None:
        return True
    if _is_full_or_gone(error):
        return False
    raise error


def plain(socket: zmq.asyncio.Socket) -> zmq.Socket[Any]:
    """A plain (blocking-API) shadow of an asyncio socket, for sends that never wait.

    An asyncio send costs a future and its event bookkeeping per message even when the peer has
    room; a bulk stream sends thousands of frames a second, nearly all of which go at once.
    """
    return zmq.Socket.shadow(socket.underlying)


def offer_now(socket: zmq.Socket[Any], frames: list[Payload | zmq.Frame]) -> bool:
    """Send through a `plain` socket if the peer can take it now; False: full or gone.

    It does not queue behind an asyncio send still waiting on the same socket, so it is for
    bulk frames only: each stream awaits its own sends, and order across streams is free.
    """
    try:
        socket.send_multipart(frames, zmq.NOBLOCK, copy=False)
    except zmq.ZMQError as error:
        if _is_full_or_gone(error):
            return False
        raise
    return True


def _is_full_or_gone(error: BaseException) -> bool:
    return isinstance(error, zmq.Again) or (
        isinstance(error, zmq.ZMQError) and error.errno == zmq.EHOSTUNREACH
    )


async def messages(socket: zmq.asyncio.Socket) -> AsyncIterator[list[zmq.Frame]]:
    """Received multipart messages as frames (zero-copy), yielding the loop now and then.

    Waits through the asyncio socket only when nothing is queued; what is already queued is
    drained through a plain shadow of the same socket, which skips the future and the event
    bookkeeping an asyncio receive costs per message.
    """
    drain = plain(socket)
    while True:
        yield await socket.recv_multipart(copy=False)
        async for frames in _while_queued(drain):
            yield frames


async def incoming(socket: zmq.asyncio.Socket) -> AsyncGenerator[list[zmq.Frame], None]:
    """Received multipart messages of a socket nothing sends on any more, as `messages` yields
    them, woken by a reader of our own on ZeroMQ's descriptor.

    For the worker's bulk-in, a keystroke's path: an asyncio receive that has to wait goes
    through pyzmq's futures and event bookkeeping, 0.04-0.12 ms more per message on the path
    than a reader that wakes the consumer (docs/benchmarks.md). The reader replaces pyzmq's own
    on the descriptor (the loop takes one per descriptor), so nothing may await this socket
    meanwhile.
    The consumer still awaits each message's work before the next is taken: ZeroMQ's queue, not
    this one, holds what it has not reached (and its high-water mark still refuses the sender).
    """
    drain = plain(socket)
    loop = asyncio.get_running_loop()
    descriptor = cast(int, drain.getsockopt(zmq.FD))
    arrived = asyncio.Event()

    def look() -> None:
        queued(drain)  # reading ZMQ_EVENTS re-arms the descriptor, which is edge-triggered
        arrived.set()

    loop.add_reader(descriptor, look)
    try:
        while True:
            arrived.clear()
            async for frames in _while_queued(drain):
                yield frames
            await arrived.wait()
    finally:
        loop.remove_reader(descriptor)


async def _while_queued(drain: zmq.Socket[Any]) -> AsyncIterator[list[zmq.Frame]]:
    """The messages that wait, each received only when the consumer asks for it, until none
    does; the loop gets a turn every `YIELD_EVERY` of them."""
    while True:
        for _ in range(YIELD_EVERY):
            if not queued(drain):
                return
            yield drain.recv_multipart(zmq.NOBLOCK, copy=False)
        await asyncio.sleep(0)


class MessagePump:
    """Hands every message a socket receives to `on_message`, straight from the event loop.

    For a receive-only socket on the hot path (a worker's bulk stream): no coroutine, no
    future and none of pyzmq's asyncio bookkeeping per message, only a reader on the socket's
    file descriptor and non-blocking receives through a `plain` shadow. ZeroMQ's descriptor is
    edge-triggered, so every wakeup drains until nothing is queued, handing the loop back every
    `YIELD_EVERY` messages. Nothing else may wait on the same socket through asyncio (the loop
    takes one reader per descriptor), so the socket is never awaited on while a pump runs.
    """

    def __init__(
        self, socket: zmq.asyncio.Socket, on_message: Callable[[list[zmq.Frame]], None]
    ) -> None:
        self._socket = plain(socket)
        self._on_message = on_message
        self._loop = asyncio.get_running_loop()
        self._fd = cast(int, self._socket.getsockopt(zmq.FD))
        self._loop.add_reader(self._fd, self._drain)
        self._pending = self._loop.call_soon(self._drain)
        """Messages queued before the reader existed raise no edge: look once now."""

    def _drain(self) -> None:
        self._pending.cancel()
        socket = self._socket
        taken = 0
        for _ in range(YIELD_EVERY):
            if not queued(socket):
                return
            frames = socket.recv_multipart(zmq.NOBLOCK, copy=False)
            self._on_message(frames)
            taken += sum(len(frame) for frame in frames)
            if taken >= YIELD_BYTES:
                break
        self._pending = self._loop.call_soon(self._drain)

    def close(self) -> None:
        """Stop reading (before the socket is closed)."""
        self._pending.cancel()
        self._loop.remove_reader(self._fd)


def queued(socket: zmq.Socket[Any]) -> bool:
    """Whether a message waits: asking ZMQ_EVENTS costs a third of a receive that fails."""
    return bool(cast(int, socket.get(zmq.EVENTS)) & _POLLIN)


def views(frames: Sequence[zmq.Frame]) -> list[memoryview]:
    """The frames' buffers: views that keep each frame alive, never copies."""
    # pyzmq types `Frame.__buffer__` wrongly; a Frame does export the buffer protocol.
    return [memoryview(frame) for frame in frames]  # type: ignore[arg-type]
