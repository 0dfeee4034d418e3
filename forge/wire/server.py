"""What the server sends: message builders, and `JsonFrame`, encoded once for every recipient.

A server message is a dict tagged on `kind`. `JsonFrame.encode(message)` turns it into UTF-8 JSON
once; each connection then sends `frame.for_connection(deflate)`: the text itself, or, on a
`?deflate=1` connection and for a body of `DEFLATE_THRESHOLD` bytes or more, binary kind 3 (gzip
level 6, mtime 0, so the bytes are deterministic; O-T6). The gzip is computed once and shared.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from typing import Any

import msgspec

from forge.wire.binary import Kind
from forge.wire.seats import Seat, Subject

PROTOCOL_VERSION = 29
"""O-G1: the protocol version every client speaks; fixed, never negotiated (G03)."""

DEFLATE_THRESHOLD = 65536
"""T19: server JSON of this many UTF-8 bytes or more crosses as kind 3 on a deflate connection."""

GZIP_LEVEL = 6

Message = dict[str, Any]
Sendable = Message | msgspec.Struct
"""A message built here as a dict, or a tagged struct (`forge.wire.browser`): both encode alike."""

_encoder = msgspec.json.Encoder()


@dataclass(slots=True)
class JsonFrame:
    """One server message, encoded once; `text` is its UTF-8 JSON."""

    text: bytes
    _deflated: bytes | None = field(default=None, repr=False)

    @classmethod
    def encode(cls, message: Sendable) -> JsonFrame:
        return cls(_encoder.encode(message))

    @property
    def deflatable(self) -> bool:
        return len(self.text) >= DEFLATE_THRESHOLD

    def deflated(self) -> bytes:
        """The kind-3 binary frame: the tag, then gzip of the text (computed once)."""
        if self._deflated is None:
            body = gzip.compress(self.text, compresslevel=GZIP_LEVEL, mtime=0)
            self._deflated = bytes((Kind.GZIP_JSON,)) + body
        return self._deflated

    def for_connection(self, deflate: bool) -> tuple[bytes, bool]:
        """`(data, is_text)` as this connection should receive it."""
        if deflate and self.deflatable:
            return self.deflated(), False
        return self.text, True


def greeting(*, forge_version: str, forge_version_short: str, client_settings: Message) -> Message:
    """Frame 1 (G02): the fixed protocol number, the build, and the `[client]`/`[dictate]` keys."""
    return {
        "kind": "greeting",
        "version": PROTOCOL_VERSION,
        "forge_version": forge_version,
        "forge_version_short": forge_version_short,
        "settings": client_settings,
    }


def settings(document: Message) -> Message:
    """Frame 2 (G06) and every applied reload: the effective-config document, no seat."""
    return {"kind": "settings", "document": document}


def pong() -> Message:
    return {"kind": "pong"}


def snapshot(subject: Subject, data: Message) -> Message:
    return {"kind": "snapshot", "subject": subject, "data": data}


def update(variant: str, body: Message | None, *, seq: int | None, span: int = 1) -> Message:
    """One SessionUpdate, externally tagged (S19); a unit variant (`body` None) is its bare name.

    A seat's update carries its `seq` (S20); a keyless update has no `seq` key (S22, O-S7).
    """
    message: Message = {"kind": "update", "update": variant if body is None else {variant: body}}
    if seq is not None:
        message["seq"] = seq
    message["span"] = span
    return message


def encoded(value: Any) -> msgspec.Raw:
    """`value` as JSON text that a later message embeds verbatim (a seat's window keeps it
    deflated: a fraction of the memory of the dicts it was encoded from)."""
    return msgspec.Raw(_encoder.encode(value))


def seat_frames(slot: Seat, epoch: str, frames: list[tuple[int, Any]]) -> Message:
    """The answer to `seat_range` (S23): each frame `{seq, update}` in the live update's shape."""
    return {
        "kind": "seat_frames",
        "slot": slot,
        "epoch": epoch,
        "frames": [{"seq": seq, "update": payload} for seq, payload in frames],
    }


def error(what: str, why: str, seat: Seat | None = None, dispatch_id: Any = None) -> Message:
    """S18: what failed, why in one sentence, the seat it belongs to or null, dispatch_id null."""
    return {"kind": "error", "what": what, "why": why, "seat": seat, "dispatch_id": dispatch_id}


def reply(reply_to: int | str, body: Any) -> Message:
    return {"kind": "reply", "reply_to": reply_to, "body": body}
