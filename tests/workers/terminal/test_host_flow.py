"""The host's flow decisions without processes: the send window's hysteresis, the mute gate."""

from __future__ import annotations

import pytest

from forge.workers.terminal.flow import SEND_HIGH, SEND_LOW, MuteGate, Reading, SendWindow

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
