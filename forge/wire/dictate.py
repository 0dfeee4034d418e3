"""What the server tells clients about dictation and voice: typed messages, encoded once here.

A take's messages go to the connection that began it and nobody else (`dictate_started`,
`dictate_level`, `dictate_phase`, `dictate_partial`, then `dictate_ended` or `dictate_failed`);
`take` is the server's number for the take, so a client that starts another can tell their
messages apart. `voice_mode_state` goes to every subscriber of the seat, `voice_audio` (one
rendered clip, base64 i16 mono PCM) likewise, numbered per seat in render order. Each message is
a `ServerMessage`, registered in `forge.wire.registry`.
"""

from __future__ import annotations

import base64
from typing import Any

import msgspec

from forge.wire.seats import Seat
from forge.wire.server import ServerMessage


class Axes(msgspec.Struct, frozen=True):
    """The three `[dictate]` axes a take was shaped by."""

    styling: str
    structure: str
    context: str


class DictateStarted(ServerMessage, frozen=True, kw_only=True, tag="dictate_started"):
    """The take is registered: its audio (kind 0) is read from the next frame on."""

    key: Seat
    take: int
    surface: str | None
    options: Axes


class DictateLevel(ServerMessage, frozen=True, kw_only=True, tag="dictate_level"):
    """The microphone's level over the last 100 ms of the take's audio (RMS, full scale 1.0)."""

    key: Seat
    take: int
    rms: float


class DictatePhase(ServerMessage, frozen=True, kw_only=True, tag="dictate_phase"):
    """listening, speech, silence, transcribing or done."""

    key: Seat
    take: int
    phase: str


class DictatePartial(ServerMessage, frozen=True, kw_only=True, tag="dictate_partial"):
    """The words so far (shaped); each partial replaces the last. Nothing lands from one."""

    key: Seat
    take: int
    text: str


class DictateEnded(ServerMessage, frozen=True, kw_only=True, tag="dictate_ended"):
    """The take's words, for the box on `surface` that began it: this is what lands."""

    key: Seat
    take: int
    surface: str | None
    text: str
    raw: str
    """The engine's words before the axes shaped them."""
    options: Axes
    audio_ms: int
    segments: int
    prompt: str | None = None
    """The uuid of the agent prompt the words became (a take stopped with `send`), else null."""


class DictateFailed(ServerMessage, frozen=True, kw_only=True, tag="dictate_failed"):
    """The take ended without words: nothing lands. `cancelled` when this client asked."""

    key: Seat
    take: int
    surface: str | None
    why: str
    cancelled: bool = False


class VoiceModeState(ServerMessage, frozen=True, kw_only=True, tag="voice_mode_state"):
    """How many connections have voice on for the seat."""

    key: Seat
    listeners: int


class VoiceAudio(ServerMessage, frozen=True, kw_only=True, tag="voice_audio"):
    """One rendered clip of the seat's speech: mono i16 little-endian samples, base64."""

    key: Seat
    seq: int
    sample_rate: int
    pcm: str

    @classmethod
    def of(cls, key: Seat, seq: int, sample_rate: int, samples: bytes) -> VoiceAudio:
        return cls(
            key=key, seq=seq, sample_rate=sample_rate, pcm=base64.b64encode(samples).decode()
        )

    def samples(self) -> bytes:
        return base64.b64decode(self.pcm)


class Said(msgspec.Struct, frozen=True, kw_only=True):
    """The reply body of `voice_say`: the clip's seq, or why nothing was said."""

    ok: bool
    seq: int | None = None
    seconds: float | None = None
    why: str | None = None


DictateMessage = (
    DictateStarted
    | DictateLevel
    | DictatePhase
    | DictatePartial
    | DictateEnded
    | DictateFailed
    | VoiceModeState
    | VoiceAudio
)


def body(struct: msgspec.Struct) -> dict[str, Any]:
    """A reply body or update body as builtins."""
    built: dict[str, Any] = msgspec.to_builtins(struct)
    return built
