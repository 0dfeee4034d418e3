"""What the server sends, decoded for a client: typed frames, or `OtherFrame` for the rest.

The shapes are the ones `forge.wire.server` builds (docs/protocol.md); the terminal's frames
are `forge.wire.terminal`'s own structs (the ones the server encodes, re-exported here); binary
frames are read with `forge.wire.binary`'s layouts, and kind 3 (a gzipped JSON frame on a
`?deflate=1` connection) is unwrapped into the frame it carries. A kind this client does not
draw is an `OtherFrame` (text) or `OtherBinary`, never an error: servers grow, clients ignore.
"""

from __future__ import annotations

import gzip
from typing import Any

import msgspec

from forge.errors import PeerError
from forge.wire.binary import Kind
from forge.wire.seats import Seat, Subject
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
    "ServerFrame",
    "Settings",
    "Snapshot",
    "TerminalControl",
    "TerminalOutput",
    "TerminalView",
    "Update",
    "decode_frame",
]


class ServerFrame(msgspec.Struct, frozen=True, kw_only=True):
    """Base of the JSON frames a client reads; unknown extra fields are ignored."""


class Greeting(ServerFrame, frozen=True):
    version: int
    forge_version: str
    forge_version_short: str
    settings: dict[str, Any]


class Settings(ServerFrame, frozen=True):
    document: dict[str, Any]


class Pong(ServerFrame, frozen=True):
    pass


class Snapshot(ServerFrame, frozen=True):
    subject: Subject
    data: dict[str, Any]


class Update(ServerFrame, frozen=True):
    """One SessionUpdate: `{"name": {...}}`, or a bare name for a unit variant (S19)."""

    update: str | dict[str, Any]
    seq: int | None = None
    span: int = 1

    @property
    def variant(self) -> str:
        return self.update if isinstance(self.update, str) else next(iter(self.update))

    @property
    def body(self) -> dict[str, Any]:
        if isinstance(self.update, str):
            return {}
        body: dict[str, Any] = self.update[self.variant]
        return body


class Error(ServerFrame, frozen=True):
    what: str
    why: str
    seat: Seat | None = None
    dispatch_id: Any = None


class Reply(ServerFrame, frozen=True):
    reply_to: int | str
    body: Any


class OtherFrame(ServerFrame, frozen=True):
    """A JSON frame of a kind this client does not read."""

    kind: str
    raw: dict[str, Any]


class OtherBinary(msgspec.Struct, frozen=True):
    """A binary frame of a kind this client does not draw (browser frames, audio)."""

    kind: int
    data: bytes


Frame = (
    Greeting
    | Settings
    | Pong
    | Snapshot
    | Update
    | Error
    | Reply
    | TerminalView
    | TerminalControl
    | OtherFrame
    | TerminalOutput
    | OtherBinary
)

_SHAPES: dict[str, type[msgspec.Struct]] = {
    "greeting": Greeting,
    "settings": Settings,
    "pong": Pong,
    "snapshot": Snapshot,
    "update": Update,
    "error": Error,
    "reply": Reply,
    "terminal_view": TerminalView,
    "terminal_control": TerminalControl,
}
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
        shape = _SHAPES.get(kind)
        if shape is None:
            return OtherFrame(kind=kind, raw=raw)
        frame: Frame = msgspec.convert(raw, shape)  # type: ignore[assignment]
    except msgspec.DecodeError as error:
        raise MalformedFrame(f"a frame that does not decode: {error}") from None
    return frame
