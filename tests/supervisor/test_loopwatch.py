"""The loop watch names what held the supervisor's event loop, and for how long."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from structlog.testing import capture_logs

from forge.supervisor.loopwatch import LoopWatch


def hold_the_loop_until_seen(records: list[dict[str, Any]]) -> None:
    """What a blocking call on the loop does: nothing else runs until the watch has seen it."""
    deadline = time.monotonic() + 60  # a bound for a broken watch, not a measurement
    while not any(r["event"] == "loop_stalled" for r in records):
        assert time.monotonic() < deadline, records
        time.sleep(0.01)


async def test_a_held_loop_is_reported_with_the_holder_and_then_how_long_it_stood() -> None:
    watch = LoopWatch(threshold_s=0.2, tick_s=0.05)
    with capture_logs() as records:
        watch.start()
        try:
            hold_the_loop_until_seen(records)
            turned = asyncio.Event()  # set after the watch's overdue tick has run
            asyncio.get_running_loop().call_later(0.1, turned.set)
            await turned.wait()
        finally:
            watch.stop()
    stalled = next(r for r in records if r["event"] == "loop_stalled")
    assert "hold_the_loop_until_seen" in stalled["stack"]
    assert stalled["stood_s"] >= 0.2
    resumed = next(r for r in records if r["event"] == "loop_resumed")
    assert resumed["stood_s"] >= stalled["stood_s"]


async def test_a_loop_that_keeps_turning_is_never_reported() -> None:
    watch = LoopWatch(threshold_s=5.0, tick_s=0.01)
    with capture_logs() as records:
        watch.start()
        for _ in range(20):
            await asyncio.sleep(0.01)
        watch.stop()
    assert [r for r in records if r["event"].startswith("loop_")] == []
