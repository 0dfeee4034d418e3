"""The tagged binary frames: the first byte is the kind, integers are little-endian (B01-B10).

Clients send 0 (dictation audio) and 5 (terminal input); the server sends 1 (browser frame),
2 (browser audio), 3 (gzipped JSON) and 4 (terminal output). `decode_client_binary` applies the
direction rule: anything a client may not send, a short header, an unknown kind or an oversized
dictation payload comes back as `Dropped(reason)`. A binary frame has no reply channel, so the
caller writes the reason to a debug record and answers nothing (B03, B04).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum


class Kind(IntEnum):
    DICTATION = 0
    BROWSER_FRAME = 1
    BROWSER_AUDIO = 2
    GZIP_JSON = 3
    TERMINAL_OUTPUT = 4
    TERMINAL_INPUT = 5


CLIENT_KINDS = frozenset({Kind.DICTATION, Kind.TERMINAL_INPUT})
SERVER_KINDS = frozenset(
    {Kind.BROWSER_FRAME, Kind.BROWSER_AUDIO, Kind.GZIP_JSON, Kind.TERMINAL_OUTPUT}
)

DICTATION_MAX_BYTES = 16 * 1024
"""B03, O-B4: a dictation payload of exactly 16 KiB is taken; one byte more is dropped."""

BROWSER_FRAME_HEADER = struct.Struct("<BHHIHHBBHH")
"""B05: kind, profile, tab, seq, width, height, format, key, page width, page height (19 bytes)."""
BROWSER_AUDIO_HEADER = struct.Struct("<BHHIIB")
"""B08: kind, profile, tab, seq, rate, channels (14 bytes)."""
TERMINAL_OUTPUT_HEADER = struct.Struct("<BHI")
"""B09: kind, terminal id, seq (7 bytes)."""
TERMINAL_INPUT_HEADER = struct.Struct("<BH")
"""B10: kind, terminal id (3 bytes)."""

FORMAT_WEBP = 1
FORMAT_JPEG = 2


@dataclass(frozen=True, slots=True)
class Dictation:
    """Kind 0: i16 mono samples at 16 kHz for the take this connection started."""

    samples: bytes


@dataclass(frozen=True, slots=True)
class TerminalInput:
    """Kind 5: keystrokes for one terminal."""

    terminal: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Dropped:
    """A client binary frame this server does not take, and why (for the debug record)."""

    reason: str
    kind: int | None


ClientBinary = Dictation | TerminalInput | Dropped


def decode_client_binary(frame: bytes) -> ClientBinary:
    """Apply the direction rule and the layouts to one binary frame from a client."""
    if not frame:
        return Dropped("empty binary frame", None)
    tag = frame[0]
    if tag == Kind.DICTATION:
        payload = frame[1:]
        if not payload:
            return Dropped("empty dictation frame", tag)
        if len(payload) > DICTATION_MAX_BYTES:
            return Dropped(
                f"dictation payload of {len(payload)} bytes exceeds {DICTATION_MAX_BYTES}", tag
            )
        if len(payload) % 2:
            return Dropped(
                f"dictation payload of {len(payload)} bytes is not whole i16 samples", tag
            )
        return Dictation(payload)
    if tag == Kind.TERMINAL_INPUT:
        if len(frame) < TERMINAL_INPUT_HEADER.size:
            return Dropped(
                f"short header: kind 5 needs {TERMINAL_INPUT_HEADER.size} bytes, got {len(frame)}",
                tag,
            )
        _, terminal = TERMINAL_INPUT_HEADER.unpack_from(frame)
        return TerminalInput(terminal, frame[TERMINAL_INPUT_HEADER.size :])
    if tag in SERVER_KINDS:
        return Dropped(f"kind {tag} ({Kind(tag).name.lower()}) is sent only by the server", tag)
    return Dropped(f"unknown binary kind {tag}", tag)


def browser_frame(
    *,
    profile: int,
    tab: int,
    seq: int,
    width: int,
    height: int,
    image_format: int,
    key: bool,
    page_width: int,
    page_height: int,
    image: bytes,
) -> bytes:
    """Kind 1: a header, then the host's encoded bytes untouched (B05, B06)."""
    header = BROWSER_FRAME_HEADER.pack(
        Kind.BROWSER_FRAME,
        profile,
        tab,
        seq,
        width,
        height,
        image_format,
        int(key),
        page_width,
        page_height,
    )
    return header + image


def browser_audio(
    *, profile: int, tab: int, seq: int, rate: int, channels: int, samples: bytes
) -> bytes:
    """Kind 2: interleaved i16 PCM of one tab (B08)."""
    return (
        BROWSER_AUDIO_HEADER.pack(Kind.BROWSER_AUDIO, profile, tab, seq, rate, channels) + samples
    )


def terminal_output(*, terminal: int, seq: int, data: bytes) -> bytes:
    """Kind 4: the shell's bytes, numbered per terminal (B09)."""
    return TERMINAL_OUTPUT_HEADER.pack(Kind.TERMINAL_OUTPUT, terminal, seq) + data


def terminal_input(*, terminal: int, data: bytes) -> bytes:
    """Kind 5, as a client writes it (used by clients and tests)."""
    return TERMINAL_INPUT_HEADER.pack(Kind.TERMINAL_INPUT, terminal) + data


def dictation(samples: bytes) -> bytes:
    """Kind 0, as a client writes it."""
    return bytes((Kind.DICTATION,)) + samples
