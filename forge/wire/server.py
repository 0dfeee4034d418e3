"""What the server sends: the envelope messages, and `JsonFrame`, encoded once for every recipient.

Every server message is a `ServerMessage`, a frozen struct tagged on `kind`, and is registered
once in `forge.wire.registry`. `JsonFrame.encode(message)` turns it into UTF-8 JSON once; each
connection then sends `frame.for_connection(deflate)`: the text itself, or, on a `?deflate=1`
connection and for a body of `DEFLATE_THRESHOLD` bytes or more, binary kind 3 (gzip level 6,
mtime 0, so the bytes are deterministic; O-T6). The gzip is computed once and shared.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from forge.errors import InternalError
from forge.wire.binary import Kind
from forge.wire.seats import Seat, Subject

PROTOCOL_VERSION = 29
"""O-G1: the protocol version every client speaks; fixed, never negotiated (G03)."""

DEFLATE_THRESHOLD = 65536
"""T19: server JSON of this many UTF-8 bytes or more crosses as kind 3 on a deflate connection."""

GZIP_LEVEL = 6

_encoder = msgspec.json.Encoder()


class ServerMessage(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    """Base of every server message; the subclass's tag is its `kind`. A client ignores the
    fields it does not know (servers grow)."""


@dataclass(slots=True)
class JsonFrame:
    """One server message, encoded once; `text` is its UTF-8 JSON."""

    text: bytes
    _deflated: bytes | None = field(default=None, repr=False)

    @classmethod
    def encode(cls, message: ServerMessage) -> JsonFrame:
        """`message` as JSON; anything but a `ServerMessage` (a dict built in place) is a bug."""
        if not isinstance(message, ServerMessage):
            raise InternalError(f"only a ServerMessage is sent, not {type(message).__name__}")
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


class Greeting(ServerMessage, frozen=True, kw_only=True, tag="greeting"):
    """Frame 1 (G02): the fixed protocol number, the build, and the `[client]`/`[dictate]` keys."""

    version: int = PROTOCOL_VERSION
    forge_version: str
    forge_version_short: str
    settings: dict[str, Any]


class Settings(ServerMessage, frozen=True, kw_only=True, tag="settings"):
    """Frame 2 (G06) and every applied reload: the effective-config document, no seat."""

    document: dict[str, Any]


class Pong(ServerMessage, frozen=True, kw_only=True, tag="pong"):
    """The answer to `ping`, and nothing else (T12)."""


class Snapshot(ServerMessage, frozen=True, kw_only=True, tag="snapshot"):
    """A subject's whole state, as its subscriber draws it."""

    subject: Subject
    data: dict[str, Any]


UpdatePayload = str | dict[str, Any] | msgspec.Raw
"""A SessionUpdate externally tagged (S19): `{"name": {...}}`, a unit variant's bare name, or
that JSON already encoded (a seat's window keeps the encoded text)."""


class Update(ServerMessage, frozen=True, kw_only=True, tag="update", omit_defaults=True):
    """One SessionUpdate. A seat's update carries its `seq` (S20); a keyless update has no `seq`
    key (S22, O-S7)."""

    update: UpdatePayload
    seq: int | msgspec.UnsetType | None = msgspec.UNSET
    """The seat's number of the frame's oldest update; absent on a keyless update, null on a
    seat's answer sent out of band (`read_call_output`'s), which stands nowhere in the
    sequence."""
    span: int

    @classmethod
    def of(cls, variant: str, body: Any, *, seq: int | None, span: int = 1) -> Update:
        """The update `variant` with `body` (None: a unit variant, sent as its bare name); `seq`
        None leaves the key out (a keyless update)."""
        number: int | msgspec.UnsetType = msgspec.UNSET if seq is None else seq
        return cls(update=variant if body is None else {variant: body}, seq=number, span=span)

    @classmethod
    def out_of_band(cls, variant: str, body: Any) -> Update:
        """A seat's update answered to one connection outside the seat's stream: `seq: null`."""
        return cls(update={variant: body}, seq=None, span=1)

    @property
    def variant(self) -> str:
        update = self.update
        if isinstance(update, msgspec.Raw):
            update = msgspec.json.decode(update)
        return update if isinstance(update, str) else next(iter(update))

    @property
    def body(self) -> dict[str, Any]:
        update = self.update
        if isinstance(update, msgspec.Raw):
            update = msgspec.json.decode(update)
        if isinstance(update, str):
            return {}
        body: dict[str, Any] = update[self.variant]
        return body


def encoded(value: Any) -> msgspec.Raw:
    """`value` as JSON text that a later message embeds verbatim (a seat's window keeps it
    deflated: a fraction of the memory of the dicts it was encoded from)."""
    return msgspec.Raw(_encoder.encode(value))


class SeatFrame(msgspec.Struct, frozen=True, kw_only=True):
    """One numbered frame of a seat, its update in the live update's shape."""

    seq: int
    update: UpdatePayload


class SeatFrames(ServerMessage, frozen=True, kw_only=True, tag="seat_frames"):
    """The answer to `seat_range` (S23)."""

    slot: Seat
    epoch: str
    frames: list[SeatFrame]


class Error(ServerMessage, frozen=True, kw_only=True, tag="error"):
    """S18: what failed, why in one sentence, the seat it belongs to or null, dispatch_id null."""

    what: str
    why: str
    seat: Seat | None = None
    dispatch_id: None = None


class Reply(ServerMessage, frozen=True, kw_only=True, tag="reply"):
    """The answer to a verb sent with `reply_to` (O-S9), echoing it verbatim."""

    reply_to: int | str
    body: Any


class Refused(msgspec.Struct, frozen=True, kw_only=True):
    """The body of a `reply` that refuses, for any verb asked with `reply_to`: `{ok: false, why}`
    in one sentence."""

    ok: Literal[False] = False
    why: str


class Page(ServerMessage, frozen=True, kw_only=True, tag="page"):
    """The answer to `more`: an agent seat's turns before the cursor asked for, and the cursor for
    the page before them (null at the start); empty with a null cursor for a seat without a
    conversation (O-S11)."""

    conversation: Seat
    turns: list[Any] = []
    cursor: int | None = None
