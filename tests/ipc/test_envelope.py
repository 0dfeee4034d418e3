"""The envelope without sockets: what goes in comes out, and malformed frames are refused."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from forge.ipc.envelope import (
    PROTOCOL_VERSION,
    DataHeaders,
    Envelope,
    MessageType,
    decode,
    encode,
)
from forge.ipc.errors import ProtocolViolation


def test_header_is_the_six_slot_msgpack_list() -> None:
    frames = encode(
        Envelope(MessageType.DATA, request_id=None, stream_id="pty", seq=7, body={"n": 1})
    )
    assert msgpack.unpackb(frames[0]) == [PROTOCOL_VERSION, "data", None, "pty", 7, {"n": 1}]


def test_payload_frames_are_the_same_objects_not_copies() -> None:
    payload = memoryview(bytearray(b"\x01" * 70_000))
    frames = encode(Envelope(MessageType.DATA, stream_id="s", seq=1, payloads=(payload,)))
    assert frames[1] is payload
    decoded = decode(frames)
    assert decoded.payloads[0] is payload


@given(
    message_type=st.sampled_from(MessageType),
    request_id=st.none() | st.integers(min_value=0, max_value=2**63),
    stream_id=st.none() | st.text(max_size=20),
    seq=st.integers(min_value=0, max_value=2**63),
    body=st.none()
    | st.dictionaries(st.text(max_size=5), st.integers(-(2**63), 2**63) | st.text(max_size=5)),
    payloads=st.lists(st.binary(max_size=64), max_size=3),
)
def test_round_trip(
    message_type: MessageType,
    request_id: int | None,
    stream_id: str | None,
    seq: int,
    body: object,
    payloads: list[bytes],
) -> None:
    envelope = Envelope(message_type, request_id, stream_id, seq, body, tuple(payloads))
    assert decode(encode(envelope)) == envelope


def _header(*slots: object) -> bytes:
    packed: bytes = msgpack.packb(list(slots))
    return packed


@pytest.mark.parametrize(
    ("frames", "words"),
    [
        ([], "header frame is required"),
        ([b"\xc1"], "not msgpack"),
        ([_header(1, "hello", None, None, 0)], "[version, type"),
        ([msgpack.packb({"type": "hello"})], "[version, type"),
        ([_header(1, "shout", None, None, 0, None)], "unknown message type 'shout'"),
        ([_header("1", "hello", None, None, 0, None)], "version must be an integer"),
        ([_header(1, "reply", "7", None, 0, None)], "request_id must be an integer"),
        ([_header(1, "data", None, 3, 0, None)], "stream_id must be a string"),
        ([_header(1, "data", None, "s", -1, None)], "seq must be a non-negative"),
        ([_header(1, "data", None, "s", True, None)], "seq must be a non-negative"),
    ],
)
def test_malformed_messages_are_protocol_violations(frames: list[bytes], words: str) -> None:
    with pytest.raises(ProtocolViolation, match=words.replace("[", r"\[")):
        decode(frames)


def test_another_version_still_decodes_so_the_handshake_can_refuse_it() -> None:
    envelope = decode([_header(2, "hello", None, None, 0, {"protocol": 2})])
    assert envelope.version == 2
    assert envelope.type is MessageType.HELLO


@given(
    seq=st.integers(min_value=0, max_value=2**63),
    meta=st.none() | st.integers(-(2**63), 2**63) | st.text(),
)
def test_the_bulk_fast_path_packs_the_same_header_as_encode(seq: int, meta: object) -> None:
    headers = DataHeaders()
    for stream in ("pty", "input", "pty"):  # one packer serves every stream
        expected = encode(Envelope(MessageType.DATA, None, stream, seq, meta, (b"x",)))[0]
        assert headers.pack(stream, seq, meta) == expected
