"""How often a seat's terminal activity is announced to home: the first at once, then at most
every ACTIVITY_PUSH_MS (a flood would push a row per frame)."""

from __future__ import annotations

import pytest

from forge.supervisor.terminal.service import ACTIVITY_PUSH_MS, activity_push_due


@pytest.mark.parametrize(
    ("pushed_ms", "now_ms", "due"),
    [
        (None, 1_000, True),
        (1_000, 1_000, False),
        (1_000, 1_000 + ACTIVITY_PUSH_MS - 1, False),
        (1_000, 1_000 + ACTIVITY_PUSH_MS, True),
    ],
)
def test_activity_is_announced_at_once_then_at_most_every_push_interval(
    pushed_ms: int | None, now_ms: int, due: bool
) -> None:
    assert activity_push_due(pushed_ms, now_ms) is due
