"""The host's flow decisions without processes: the send and parse windows, the mute gate."""

from __future__ import annotations

import pytest

from forge.workers.terminal.flow import (
    SEND_HIGH,
    SEND_LOW,
    UNPARSED_HIGH,
    UNPARSED_LOW,
    MuteGate,
    ParseWindow,
    Reading,
    SendWindow,
)

KIB = 1024
PAUSE, RESUME = Reading.PAUSE, Reading.RESUME


@pytest.mark.parametrize(
    ("events", "actions"),
    [
        # Queued bytes up to the high mark keep reading; one byte more pauses, once.
        ([("queued", SEND_HIGH)], [None]),
        ([("queued", SEND_HIGH), ("queued", 1), ("queued", 64 * KIB)], [None, PAUSE, None]),
        # Paused, reading resumes only under the low mark (hysteresis), once.
        (
            [("queued", 2 * SEND_HIGH), ("sent", SEND_HIGH), ("sent", SEND_HIGH - SEND_LOW)],
            [PAUSE, None, None],
        ),
        (
            [("queued", 2 * SEND_HIGH), ("sent", 2 * SEND_HIGH - SEND_LOW + 1), ("sent", 0)],
            [PAUSE, RESUME, None],
        ),
        # Never paused: sending never resumes anything.
        ([("queued", 64 * KIB), ("sent", 64 * KIB)], [None, None]),
        # Paused again after a resume when the queue grows again.
        (
            [("queued", SEND_HIGH + 1), ("sent", SEND_HIGH + 1), ("queued", SEND_HIGH + 1)],
            [PAUSE, RESUME, PAUSE],
        ),
    ],
)
def test_the_send_window(events: list[tuple[str, int]], actions: list[Reading | None]) -> None:
    window = SendWindow()
    assert [getattr(window, event)(size) for event, size in events] == actions


@pytest.mark.parametrize(
    ("decisions", "applied", "muted"),
    [
        ([(True, 1)], [True], True),
        ([(True, 2), (False, 1)], [True, False], True),  # an older unmute arrived late
        ([(True, 1), (False, 2)], [True, True], False),
        ([(True, 1), (False, 1)], [True, False], True),  # the same number twice: the first wins
        ([(True, 0)], [False], False),  # a decision must be numbered
    ],
)
def test_the_mute_gate_applies_only_newer_decisions(
    decisions: list[tuple[bool, int]], applied: list[bool], muted: bool
) -> None:
    gate = MuteGate()
    assert [gate.decide(mute, epoch) for mute, epoch in decisions] == applied
    assert gate.muted is muted


CHUNK = 64 * 1024
PAST = UNPARSED_HIGH + 1
"""One frame past the parse window's high mark."""


def test_the_parse_window_stops_reading_past_its_high_mark_and_reads_again_under_its_low() -> None:
    window = ParseWindow()
    assert window.decide(True, 0, epoch=1) is None
    made = [window.sent(seq, CHUNK) for seq in range(1, UNPARSED_HIGH // CHUNK + 2)]
    assert made == [None] * (len(made) - 1) + [Reading.PAUSE]
    assert window.sent(len(made) + 1, CHUNK) is None  # paused once; a frame read meanwhile counts
    acked = len(made) + 1 - UNPARSED_LOW // CHUNK
    assert window.decide(None, acked, epoch=0) is None  # at the low mark: not under it
    assert window.unparsed == UNPARSED_LOW
    assert window.decide(None, acked + 1, epoch=0) is Reading.RESUME


def test_the_parse_window_counts_nothing_unless_paced() -> None:
    window = ParseWindow()
    assert [window.sent(seq, PAST) for seq in (1, 2)] == [None, None]
    assert window.unparsed == 0


def test_a_parse_window_turned_off_reads_again_and_forgets() -> None:
    window = ParseWindow()
    window.decide(True, 0, epoch=1)
    assert window.sent(1, PAST) is Reading.PAUSE
    assert window.decide(False, None, epoch=2) is Reading.RESUME
    assert window.unparsed == 0
    assert window.decide(True, None, epoch=1) is None  # an older decision: still off
    assert window.sent(2, PAST) is None


def test_a_fresh_views_seq_counts_as_parsed_and_older_acks_are_no_news() -> None:
    window = ParseWindow()
    window.decide(True, 10, epoch=1)
    assert window.sent(9, PAST) is None  # before the view: never to be parsed
    assert window.sent(11, PAST) is Reading.PAUSE
    assert window.decide(None, 5, epoch=0) is None
    assert window.decide(None, 11, epoch=0) is Reading.RESUME
