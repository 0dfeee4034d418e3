"""The outbound backlog's policies, without a socket: control, latest-wins, bounded and recent
streams."""

from __future__ import annotations

import pytest

from forge.supervisor.socket.outbound import ControlOverflow, OutboundBacklog


def drain(backlog: OutboundBacklog) -> list[bytes]:
    out = []
    while (entry := backlog.pop()) is not None:
        out.append(entry.data)
    return out


def test_control_frames_keep_their_order_and_text_flag() -> None:
    backlog = OutboundBacklog()
    backlog.control(b"one", text=True)
    backlog.control(b"two", text=False)
    first = backlog.pop()
    assert first is not None
    assert (first.data, first.text) == (b"one", True)
    assert drain(backlog) == [b"two"]
    assert backlog.pending_bytes == 0


def test_control_past_its_limit_overflows_rather_than_dropping() -> None:
    backlog = OutboundBacklog(control_limit=10)
    backlog.control(b"12345678", text=True)
    with pytest.raises(ControlOverflow):
        backlog.control(b"abc", text=True)
    assert drain(backlog) == [b"12345678"]


def test_the_newest_frame_of_a_tab_replaces_the_waiting_one_in_place() -> None:
    backlog = OutboundBacklog()
    backlog.control(b"view", text=True)
    backlog.latest(("tab", 1), b"frame-1")
    backlog.latest(("tab", 2), b"other-1")
    backlog.latest(("tab", 1), b"frame-2")
    backlog.control(b"after", text=True)
    assert backlog.stream_pending(("tab", 1)) == len(b"frame-2")
    assert drain(backlog) == [b"view", b"frame-2", b"other-1", b"after"]
    backlog.latest(("tab", 1), b"frame-3")
    assert drain(backlog) == [b"frame-3"]


def test_a_bounded_stream_over_its_limit_is_emptied_and_told_once() -> None:
    backlog = OutboundBacklog()
    overflows: list[str] = []
    for chunk in (b"aaaa", b"bbbb"):
        assert backlog.bounded("term", chunk, limit=10, on_overflow=lambda: overflows.append("x"))
    backlog.control(b"json", text=True)
    assert not backlog.bounded("term", b"cccc", limit=10, on_overflow=lambda: overflows.append("x"))
    assert overflows == ["x"]
    assert backlog.stream_pending("term") == 0
    assert backlog.bounded("term", b"dddd", limit=10)
    assert drain(backlog) == [b"json", b"dddd"]
    assert backlog.pending_bytes == 0


def test_written_chunks_no_longer_count_against_the_bound() -> None:
    backlog = OutboundBacklog()
    assert backlog.bounded("term", b"123456", limit=10)
    assert drain(backlog) == [b"123456"]
    assert backlog.bounded("term", b"123456", limit=10)


def test_a_pong_is_marked_as_keepalive() -> None:
    backlog = OutboundBacklog()
    backlog.control(b'{"kind":"pong"}', text=True, keepalive=True)
    backlog.control(b"{}", text=True)
    pong, other = backlog.pop(), backlog.pop()
    assert pong is not None
    assert other is not None
    assert (pong.keepalive, other.keepalive) == (True, False)


def test_a_recent_stream_keeps_its_newest_bytes_and_drops_only_the_excess() -> None:
    backlog = OutboundBacklog()
    for frame in (b"a1", b"a2", b"a3"):
        assert backlog.recent("audio", frame, limit=6) == 0
    backlog.control(b"json", text=True)
    assert backlog.recent("audio", b"a4", limit=6) == 1  # a1 makes room
    assert backlog.stream_pending("audio") == 6
    assert backlog.pending_bytes == 6 + len(b"json")
    written = backlog.pop()
    assert written is not None
    assert written.data == b"a2"
    assert backlog.recent("audio", b"a5", limit=6) == 0
    assert backlog.recent("audio", b"a6-big", limit=6) == 3  # a3, a4, a5 make room
    assert drain(backlog) == [b"json", b"a6-big"]
    assert backlog.pending_bytes == 0
    assert backlog.recent("audio", b"a7", limit=6) == 0
    assert drain(backlog) == [b"a7"]
