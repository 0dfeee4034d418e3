"""Server frames typed for a client, built with forge.wire's own builders and codec."""

from __future__ import annotations

import gzip
import json

import msgspec
import pytest

from forge.client.frames import (
    Error,
    Greeting,
    MalformedFrame,
    OtherBinary,
    OtherFrame,
    Reply,
    Snapshot,
    TerminalOutput,
    TerminalView,
    Update,
    decode_frame,
)
from forge.wire import server
from forge.wire.binary import browser_audio, terminal_output
from forge.wire.seats import HOME, Seat, session
from forge.wire.server import JsonFrame

SEAT = Seat("acme", "proj", "lead")


def text(message: server.ServerMessage) -> str:
    return JsonFrame.encode(message).text.decode()


def test_greeting() -> None:
    frame = decode_frame(
        text(server.Greeting(forge_version="1 · a", forge_version_short="1+a", settings={}))
    )
    assert frame == Greeting(
        version=server.PROTOCOL_VERSION,
        forge_version="1 · a",
        forge_version_short="1+a",
        settings={},
    )


def test_snapshots_keep_their_subject_shape() -> None:
    assert decode_frame(text(server.Snapshot(subject=HOME, data={"a": 1}))) == Snapshot(
        subject="home", data={"a": 1}
    )
    seat_frame = decode_frame(text(server.Snapshot(subject=session(SEAT), data={})))
    assert isinstance(seat_frame, Snapshot)
    assert seat_frame.subject == session(SEAT)


def test_updates_name_their_variant_and_body() -> None:
    frame = decode_frame(text(server.Update.of("terminal_changed", {"key": 1}, seq=4)))
    assert isinstance(frame, Update)
    assert (frame.variant, frame.body, frame.seq, frame.span) == (
        "terminal_changed",
        {"key": 1},
        4,
        1,
    )
    unit = decode_frame(text(server.Update.of("catalog_loaded", None, seq=None)))
    assert isinstance(unit, Update)
    assert (unit.variant, unit.body, unit.seq) == ("catalog_loaded", {}, msgspec.UNSET)
    aside = decode_frame(text(server.Update.out_of_band("call_output", {"key": 1})))
    assert isinstance(aside, Update)
    assert (aside.variant, aside.seq, aside.span) == ("call_output", None, 1)


def test_error_and_reply() -> None:
    assert decode_frame(text(server.Error(what="subscribe", why="no seat", seat=SEAT))) == Error(
        what="subscribe", why="no seat", seat=SEAT
    )
    assert decode_frame(text(server.Reply(reply_to=7, body={"ok": True, "id": 2}))) == Reply(
        reply_to=7, body={"ok": True, "id": 2}
    )


def test_terminal_view() -> None:
    message = {
        "kind": "terminal_view", "seat": {"org": "acme", "project": "proj", "label": "lead"},
        "id": 1, "cols": 80, "rows": 24, "seq": 9, "screen": "\x1b[H", "viewers": 1,
        "viewer": 3, "controller": None,
    }  # fmt: skip
    frame = decode_frame(json.dumps(message))
    assert isinstance(frame, TerminalView)
    assert (frame.seat, frame.seq, frame.viewer, frame.controller) == (SEAT, 9, 3, None)


def test_unknown_kinds_are_kept_not_refused() -> None:
    assert decode_frame('{"kind":"browser_tabs","id":1}') == OtherFrame(
        kind="browser_tabs", raw={"kind": "browser_tabs", "id": 1}
    )


def test_kind_4_is_read_with_the_wire_layout() -> None:
    assert decode_frame(terminal_output(terminal=2, seq=77, data=b"hi\r\n")) == TerminalOutput(
        2, 77, b"hi\r\n"
    )


def test_kind_3_unwraps_to_the_frame_it_carries() -> None:
    big = JsonFrame.encode(server.Snapshot(subject=HOME, data={"blob": "x" * 70_000}))
    data, is_text = big.for_connection(deflate=True)
    assert not is_text
    frame = decode_frame(data)
    assert isinstance(frame, Snapshot)
    assert frame.data["blob"] == "x" * 70_000


def test_other_binary_kinds_are_passed_by() -> None:
    audio = browser_audio(profile=1, tab=1, seq=1, rate=48000, channels=2, samples=b"\0\0")
    assert isinstance(decode_frame(audio), OtherBinary)


@pytest.mark.parametrize(
    "bad",
    [b"", b"\x04\x01", b"\x03not gzip", "not json", '{"no":"kind"}', '{"kind":"reply"}'],
)
def test_malformed_frames_are_typed_peer_errors(bad: str | bytes) -> None:
    with pytest.raises(MalformedFrame):
        decode_frame(bad)


def test_gzip_round_trip_matches_the_plain_text() -> None:
    plain = JsonFrame.encode(server.Pong())
    assert gzip.decompress(plain.deflated()[1:]) == plain.text
