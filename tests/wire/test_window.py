"""A seat's numbering and window: seq/span, the bounds, and every seat_range refusal (O-S8)."""

from __future__ import annotations

import json

import msgspec
import pytest

from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat
from forge.wire.window import SeatWindow

SEAT = Seat("acme", "proj", "lead")


def raw(value: object) -> msgspec.Raw:
    """`value`'s JSON as the supervisor hands it to the window (`wire.server.encoded`)."""
    return msgspec.Raw(json.dumps(value).encode())


def filled(count: int, **bounds: int) -> SeatWindow:
    window = SeatWindow(SEAT, "epoch-1", **bounds)
    for n in range(count):
        window.append(raw({"n": n + 1}), size=10)
    return window


def updates(frames: list[tuple[int, msgspec.Raw]]) -> list[tuple[int, object]]:
    return [(seq, json.loads(bytes(update))) for seq, update in frames]


def test_numbers_start_at_one_and_are_consecutive() -> None:
    window = SeatWindow(SEAT, "e")
    assert window.next_seq == 1
    assert [window.append(raw(i), 1) for i in range(3)] == [1, 2, 3]
    assert window.next_seq == 4


def test_a_span_takes_that_many_numbers() -> None:
    window = SeatWindow(SEAT, "e")
    assert window.append(raw("batch"), 1, span=3) == 1
    assert window.append(raw("next"), 1) == 4


def test_range_answers_oldest_first() -> None:
    window = filled(5)
    frames = window.range("epoch-1", 2, 4)
    assert updates(frames) == [(2, {"n": 2}), (3, {"n": 3}), (4, {"n": 4})]


def refusal(window: SeatWindow, epoch: str | None, first: int, last: int) -> str:
    with pytest.raises(ClientRefusal) as caught:
        window.range(epoch, first, last)
    assert caught.value.what == "seat_range"
    assert caught.value.seat == SEAT
    return caught.value.why


def test_each_refusal_names_seat_range() -> None:
    window = filled(5)
    assert "epoch" in refusal(window, "epoch-0", 1, 2)
    assert "epoch" in refusal(window, None, 1, 2)
    assert "empty" in refusal(window, "epoch-1", 3, 2)
    assert "below 1" in refusal(window, "epoch-1", 0, 2)
    assert "has not been sent" in refusal(window, "epoch-1", 2, 6)


def test_the_window_holds_at_most_its_frame_bound() -> None:
    window = filled(10, max_frames=4)
    assert window.oldest_held == 7
    assert window.held[0] == 4
    assert "no longer held" in refusal(window, "epoch-1", 6, 8)
    assert updates(window.range("epoch-1", 7, 10))[0] == (7, {"n": 7})
    assert "at most 4" in refusal(window, "epoch-1", 5, 9)


def test_the_window_holds_at_most_its_byte_bound() -> None:
    window = filled(10, max_bytes=35)
    assert window.oldest_held == 8
    assert window.held[0] == 3


def test_the_production_bounds() -> None:
    window = filled(1100)
    assert window.oldest_held == 1100 - 1024 + 1
    assert updates(window.range("epoch-1", 77, 1100))[0] == (77, {"n": 77})


def test_frames_leave_one_by_one_across_the_deflated_blocks() -> None:
    window = SeatWindow(SEAT, "e", max_frames=50)
    for n in range(1, 201):
        window.append(raw(n), 1)
        held = updates(window.range("e", window.oldest_held, window.next_seq - 1))
        assert [update for _, update in held] == list(range(max(1, n - 49), n + 1))
    assert "no longer held" in refusal(window, "e", window.oldest_held - 1, window.oldest_held)
    middle = window.range("e", window.oldest_held + 10, window.oldest_held + 20)
    assert middle[0][0] <= window.oldest_held + 10 < middle[1][0]


def test_a_span_in_the_middle_is_answered_for_any_number_it_covers() -> None:
    window = SeatWindow(SEAT, "e")
    for n in range(40):
        window.append(raw(n), 1, span=3 if n == 35 else 1)
    assert updates(window.range("e", 37, 37)) == [(36, 35)]


def test_the_window_keeps_updates_deflated_and_answers_them_whole() -> None:
    rows = [{"pid": 1000 + n, "name": "bash", "cmdline": ["bash", "-i"], "rss_bytes": 5 << 20}
            for n in range(8)]  # fmt: skip
    update = json.dumps({"processes": {"rows": rows}}).encode()
    window = SeatWindow(SEAT, "e")
    for _ in range(100):
        window.append(msgspec.Raw(update), size=len(update) + 40)
    frames, stored = window.held
    assert frames == 100
    assert stored * 10 < 100 * len(update)  # alike updates deflated together: far below 1/10
    assert [bytes(raw) for _, raw in window.range("e", 1, 100)] == [update] * 100
