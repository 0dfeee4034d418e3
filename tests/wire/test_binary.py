"""The binary codec: layouts, the direction rule, and what is dropped with which reason."""

from __future__ import annotations

import struct

import pytest

from forge.wire import binary
from forge.wire.binary import Dictation, Dropped, Kind, TerminalInput, decode_client_binary


def test_header_sizes_match_the_tables() -> None:
    assert binary.BROWSER_FRAME_HEADER.size == 19
    assert binary.BROWSER_AUDIO_HEADER.size == 14
    assert binary.TERMINAL_OUTPUT_HEADER.size == 7
    assert binary.TERMINAL_INPUT_HEADER.size == 3


def test_browser_frame_layout() -> None:
    frame = binary.browser_frame(
        profile=2, tab=3, seq=70000, width=800, height=600, image_format=binary.FORMAT_WEBP,
        key=True, page_width=400, page_height=300, image=b"RIFF",
    )  # fmt: skip
    assert struct.unpack("<BHHIHHBBHH", frame[:19]) == (1, 2, 3, 70000, 800, 600, 1, 1, 400, 300)
    assert frame[19:] == b"RIFF"


def test_browser_audio_and_terminal_output_layouts() -> None:
    audio = binary.browser_audio(profile=1, tab=2, seq=3, rate=48000, channels=2, samples=b"\1\0")
    assert struct.unpack("<BHHIIB", audio[:14]) == (2, 1, 2, 3, 48000, 2)
    out = binary.terminal_output(terminal=9, seq=5, data=b"hi")
    assert struct.unpack("<BHI", out[:7]) == (4, 9, 5)
    assert out[7:] == b"hi"


def test_client_kinds_decode() -> None:
    assert decode_client_binary(binary.dictation(b"\0" * 640)) == Dictation(b"\0" * 640)
    assert decode_client_binary(binary.terminal_input(terminal=7, data=b"ls\r")) == TerminalInput(
        7, b"ls\r"
    )
    assert decode_client_binary(bytes([5, 7, 0])) == TerminalInput(7, b"")


def test_dictation_cap_is_sixteen_kib_inclusive() -> None:
    assert isinstance(decode_client_binary(binary.dictation(b"\0" * 16384)), Dictation)
    over = decode_client_binary(binary.dictation(b"\0" * 16386))
    assert isinstance(over, Dropped)
    assert "exceeds 16384" in over.reason


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        (b"", "empty binary frame"),
        (bytes([0]), "empty dictation"),
        (bytes([0, 1, 2, 3]), "not whole i16 samples"),
        (bytes([5, 1]), "short header"),
        (bytes([1]) + bytes(30), "sent only by the server"),
        (bytes([2]) + bytes(30), "sent only by the server"),
        (bytes([3]) + bytes(30), "sent only by the server"),
        (bytes([4]) + bytes(30), "sent only by the server"),
        (bytes([6, 0]), "unknown binary kind 6"),
        (bytes([255]), "unknown binary kind 255"),
    ],
)
def test_refused_frames_are_dropped_with_a_reason(frame: bytes, reason: str) -> None:
    dropped = decode_client_binary(frame)
    assert isinstance(dropped, Dropped)
    assert reason in dropped.reason


def test_direction_matrix() -> None:
    assert {Kind.DICTATION, Kind.TERMINAL_INPUT} == binary.CLIENT_KINDS
    assert binary.CLIENT_KINDS.isdisjoint(binary.SERVER_KINDS)
    assert len(binary.CLIENT_KINDS | binary.SERVER_KINDS) == 6
