"""The envelope without sockets: what goes in comes out, and malformed frames are refused."""

from __future__ import annotations

import threading
import tracemalloc
from collections.abc import Iterator

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from forge.ipc.envelope import (
    PACK_BUFFER_KEEP_BYTES,
    PROTOCOL_VERSION,
    Envelope,
    MessageType,
    data_header,
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
    for stream in ("pty", "input", "pty"):  # one packer serves every stream
        expected = encode(Envelope(MessageType.DATA, None, stream, seq, meta, (b"x",)))[0]
        assert data_header(stream, seq, meta) == expected


@pytest.fixture
def traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def test_packing_a_small_header_takes_no_large_buffer(traced: None) -> None:
    encode(Envelope(MessageType.REQUEST, 1, None, 0, {"kind": "warm"}))  # this thread's packer
    tracemalloc.reset_peak()
    for seq in range(100):
        encode(Envelope(MessageType.REQUEST, seq, None, 0, {"kind": "open", "cols": 80}))
        data_header("pty", seq, {"rows": 24})
    now, peak = tracemalloc.get_traced_memory()
    assert peak - now < 16 * 1024  # msgpack.packb took a 256 KiB buffer for each


def test_a_huge_header_leaves_no_huge_buffer_behind(traced: None) -> None:
    encode(Envelope(MessageType.REQUEST, 1, None, 0, {"kind": "warm"}))
    before, _peak = tracemalloc.get_traced_memory()
    header = encode(Envelope(MessageType.REPLY, 1, None, 0, "x" * (4 * PACK_BUFFER_KEEP_BYTES)))[0]
    assert decode([header]).body == "x" * (4 * PACK_BUFFER_KEEP_BYTES)
    del header
    after, _peak = tracemalloc.get_traced_memory()
    assert after - before < 16 * 1024


def test_a_body_that_cannot_be_packed_is_refused_and_the_next_header_is_whole() -> None:
    with pytest.raises(TypeError):
        encode(Envelope(MessageType.REPLY, 1, None, 0, {"half": "packed", "then": object()}))
    header = encode(Envelope(MessageType.REPLY, 2, None, 0, {"n": 1}))[0]
    assert msgpack.unpackb(header) == [PROTOCOL_VERSION, "reply", 2, None, 0, {"n": 1}]


def test_threads_packing_at_once_each_get_their_own_headers() -> None:
    wrong: list[object] = []
    start = threading.Barrier(4)

    def pack_many(who: int) -> None:
        start.wait()
        for seq in range(2_000):
            body = {"who": who, "seq": seq, "pad": "y" * (seq % 700)}
            header = encode(Envelope(MessageType.EVENT, None, f"s{who}", seq, body))[0]
            if decode([header]).body != body:
                wrong.append(body)

    threads = [threading.Thread(target=pack_many, args=(who,)) for who in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
