"""What the server sends, decoded for a client: typed frames, or `OtherFrame` for the rest.

A JSON frame of a kind this client reads (`READ`) is decoded into the struct that
`forge.wire.registry` registers for its `kind`, the very struct the server encodes; binary frames
are read with `forge.wire.binary`'s layouts, and kind 3 (a gzipped JSON frame on a `?deflate=1`
connection) is unwrapped into the frame it carries. Any other kind is an `OtherFrame` (text) or
`OtherBinary`, never an error: servers grow, clients ignore.
"""

from __future__ import annotations

import gzip
from typing import Any

import msgspec

from forge.errors import PeerError
from forge.wire.binary import Kind
from forge.wire.dictate import (
    DictateEnded,
    DictateFailed,
    DictateLevel,
    DictatePartial,
    DictatePhase,
    DictateStarted,
    VoiceAudio,
    VoiceModeState,
)
from forge.wire.registry import REGISTRY, Direction, kind_of
from forge.wire.server import (
    Error,
    Greeting,
    Pong,
    Reply,
    ServerMessage,
    Settings,
    Snapshot,
    Update,
)
from forge.wire.terminal import (
    TerminalControl,
    TerminalOutput,
    TerminalView,
    decode_terminal_output,
)

__all__ = [
    "Error",
    "Frame",
    "Greeting",
    "MalformedFrame",
    "OtherBinary",
    "OtherFrame",
    "Pong",
    "Reply",
    "ServerMessage",
    "Settings",
    "Snapshot",
    "TerminalControl",
    "TerminalOutput",
    "TerminalView",
    "Update",
    "decode_frame",
]


class OtherFrame(msgspec.Struct, frozen=True, kw_only=True):
    """A JSON frame of a kind this client does not read."""

    kind: str
    raw: dict[str, Any]


class OtherBinary(msgspec.Struct, frozen=True):
    """A binary frame of a kind this client does not draw (browser frames, audio)."""

    kind: int
    data: bytes


Frame = ServerMessage | OtherFrame | TerminalOutput | OtherBinary

READ: frozenset[str] = frozenset(
    kind_of(shape)
    for shape in (
        Greeting, Settings, Pong, Snapshot, Update, Error, Reply, TerminalView, TerminalControl,
        DictateStarted, DictateLevel, DictatePhase, DictatePartial, DictateEnded, DictateFailed,
        VoiceModeState, VoiceAudio,
    )
)  # fmt: skip
"""The kinds this client reads; their shapes are the registry's."""

_object = msgspec.json.Decoder(dict[str, Any])


class MalformedFrame(PeerError):
    """The server sent something that is not a frame of the protocol."""


def decode_frame(message: str | bytes) -> Frame:
    """One WebSocket message (text or binary) from the server, typed."""
    if isinstance(message, str):
        return _decode_json(message)
    if not message:
        raise MalformedFrame("an empty binary frame")
    tag = message[0]
    if tag == Kind.TERMINAL_OUTPUT:
        output = decode_terminal_output(message)
        if output is None:
            raise MalformedFrame(f"a kind-4 frame of {len(message)} bytes has no whole header")
        return output
    if tag == Kind.GZIP_JSON:
        try:
            return _decode_json(gzip.decompress(message[1:]))
        except (OSError, EOFError) as error:
            raise MalformedFrame(f"a kind-3 frame does not gunzip: {error}") from None
    return OtherBinary(tag, message[1:])


def _decode_json(text: str | bytes) -> Frame:
    try:
        raw = _object.decode(text)
        kind = raw.get("kind")
        if not isinstance(kind, str):
            raise MalformedFrame("a JSON frame without a string `kind`")
        shape = REGISTRY.shape(Direction.SERVER, kind) if kind in READ else None
        if shape is None:
            return OtherFrame(kind=kind, raw=raw)
        frame: Frame = msgspec.convert(raw, shape)  # type: ignore[assignment]
    except msgspec.DecodeError as error:
        raise MalformedFrame(f"a frame that does not decode: {error}") from None
    return frame
