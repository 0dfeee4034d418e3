"""The one message shape between the supervisor and its workers, pure (no sockets, no clock).

A message is frame 0, a msgpack header `[version, type, request_id, stream_id, seq, body]`, plus
zero or more raw payload frames. Payloads are never packed into the header: a bulk frame the
worker prepared in its final client-wire form arrives as its own ZeroMQ frame and is handed on
as a `memoryview` of that frame, so the supervisor never decodes or copies it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, NamedTuple

import msgpack

from forge.ipc.errors import ProtocolViolation

PROTOCOL_VERSION = 1
"""Bumped on any incompatible change; `hello` with another version is rejected."""

COPY_THRESHOLD = 16 * 1024
"""Payload frames at least this big are sent zero-copy (ZeroMQ keeps a reference, no memcpy)."""

Payload = bytes | bytearray | memoryview
"""Anything a payload frame can be built from without copying."""


class MessageType(StrEnum):
    """The `type` slot of the header; who sends it is in the comment."""

    HELLO = "hello"  # worker: {protocol, kind, pid, generation, capabilities}
    WELCOME = "welcome"  # supervisor: {heartbeat_interval}
    REJECT = "reject"  # supervisor: {reason}
    HEARTBEAT = "heartbeat"  # worker, every heartbeat_interval
    REQUEST = "request"  # supervisor: request_id, {method, args}
    REPLY = "reply"  # worker: request_id, {result}
    ERROR = "error"  # worker: request_id, {code, message}
    EVENT = "event"  # worker: {event, data}
    STOP = "stop"  # supervisor: finish what you do and exit 0
    DATA = "data"  # either side, bulk socket: stream_id, seq, body = metadata, one payload
    END = "end"  # either side, bulk socket: stream_id, seq, {reason}


class Envelope(NamedTuple):
    """One decoded message. `payloads` are the raw frames after the header, untouched.

    A NamedTuple rather than a frozen dataclass: it is built once per bulk frame, and tuple
    construction costs a tenth of a frozen dataclass's on the hot path.
    """

    type: MessageType
    request_id: int | None = None
    stream_id: str | None = None
    seq: int = 0
    body: Any = None
    payloads: tuple[Payload, ...] = ()
    version: int = PROTOCOL_VERSION


PACK_BUFFER_BYTES = 512
"""A thread's packer starts with this much buffer: most headers fit, and a buffer this small
comes from the interpreter's small-object pools rather than the C heap."""

PACK_BUFFER_KEEP_BYTES = 64 * 1024
"""A packer that had to grow past this for one header is replaced, so the buffer goes back."""


class _ThreadPacker(threading.local):
    """Each thread's msgpack packer, reused for every header it packs.

    `msgpack.packb` builds a packer per call, and a packer's buffer is 256 KiB by default: a block
    taken and given back for every message, from a hole in the supervisor's heap when one fits
    it (pinning the heap's pages while held) or else mapped and unmapped: ten times this
    module's time for a small header (`bench/ipc.py`). A packer is not safe to share between
    threads, hence one each.
    """

    def __init__(self) -> None:
        self.packer = _new_packer()


def _new_packer() -> msgpack.Packer:
    return msgpack.Packer(use_bin_type=True, buf_size=PACK_BUFFER_BYTES)


_PACKERS = _ThreadPacker()


def _pack(header: list[Any]) -> bytes:
    """`header` packed by this thread's packer (which resets itself after a packing error too)."""
    packed: bytes = _PACKERS.packer.pack(header)
    if len(packed) > PACK_BUFFER_KEEP_BYTES:
        _PACKERS.packer = _new_packer()
    return packed


def encode(envelope: Envelope) -> list[Payload]:
    """The frames to send: the packed header, then each payload as it is (no copy here)."""
    header = _pack(
        [
            envelope.version,
            envelope.type.value,
            envelope.request_id,
            envelope.stream_id,
            envelope.seq,
            envelope.body,
        ]
    )
    return [header, *envelope.payloads]


_TYPES = {member.value: member for member in MessageType}


def decode(frames: Sequence[Payload]) -> Envelope:
    """Parse frames received from a peer; anything malformed is a `ProtocolViolation`."""
    if not frames:
        raise ProtocolViolation("empty message: a header frame is required")
    try:
        header = msgpack.unpackb(frames[0], raw=False, strict_map_key=False)
    except (ValueError, msgpack.UnpackException) as error:
        raise ProtocolViolation(f"header frame is not msgpack: {error}") from error
    if not isinstance(header, list) or len(header) != 6:
        raise ProtocolViolation("header must be [version, type, request_id, stream_id, seq, body]")
    version, type_name, request_id, stream_id, seq, body = header
    message_type = _TYPES.get(type_name) if type(type_name) is str else None
    # `type(x) is int` rather than isinstance: it is faster, and refuses bools on its own.
    if message_type is None:
        raise ProtocolViolation(f"unknown message type {type_name!r}")
    if type(version) is not int:
        raise ProtocolViolation(f"version must be an integer, got {version!r}")
    if request_id is not None and type(request_id) is not int:
        raise ProtocolViolation(f"request_id must be an integer or nil, got {request_id!r}")
    if stream_id is not None and type(stream_id) is not str:
        raise ProtocolViolation(f"stream_id must be a string or nil, got {stream_id!r}")
    if type(seq) is not int or seq < 0:
        raise ProtocolViolation(f"seq must be a non-negative integer, got {seq!r}")
    return Envelope(message_type, request_id, stream_id, seq, body, tuple(frames[1:]), version)


def data_header(stream_id: str, seq: int, meta: Any = None) -> bytes:
    """The header of a `data` frame: `encode(Envelope(DATA, None, stream_id, seq, meta, ...))[0]`
    without the intermediate `Envelope`, for a bulk sender's one header per frame."""
    return _pack([PROTOCOL_VERSION, MessageType.DATA.value, None, stream_id, seq, meta])
