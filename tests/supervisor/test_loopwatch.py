"""The loop watch names what held the supervisor's event loop, and for how long."""

from __future__ import annotations

import asyncio
import linecache
import sys
import time
from collections.abc import Callable
from typing import Any

from structlog.testing import capture_logs

from forge.supervisor.socket.loopwatch import STACK_FRAMES, LoopWatch, innermost_frames


def hold_the_loop_until_seen(records: list[dict[str, Any]]) -> None:
    """What a blocking call on the loop does: nothing else runs until the watch has seen it."""
    deadline = time.monotonic() + 60  # a bound for a broken watch, not a measurement
    while not any(r["event"] == "loop_stalled" for r in records):
        assert time.monotonic() < deadline, records
        time.sleep(0.01)


async def stand(hold: Callable[[list[dict[str, Any]]], None]) -> list[dict[str, Any]]:
    """Hold the loop with `hold` until the watch reports it, then let it turn: the records."""
    watch = LoopWatch(threshold_s=0.2, tick_s=0.05)
    with capture_logs() as records:
        watch.start()
        try:
            hold(records)
            turned = asyncio.Event()  # set after the watch's overdue tick has run
            asyncio.get_running_loop().call_later(0.1, turned.set)
            await turned.wait()
        finally:
            watch.stop()
    return records


async def test_a_held_loop_is_reported_with_the_holder_and_then_how_long_it_stood() -> None:
    records = await stand(hold_the_loop_until_seen)
    stalled = next(r for r in records if r["event"] == "loop_stalled")
    assert "hold_the_loop_until_seen" in stalled["stack"]
    assert stalled["stood_s"] >= 0.2
    resumed = next(r for r in records if r["event"] == "loop_resumed")
    assert resumed["stood_s"] >= stalled["stood_s"]
    assert 0 <= resumed["cpu_s"] <= resumed["stood_s"] + 0.1  # one tick's own CPU besides


def spin_until_seen(records: list[dict[str, Any]]) -> None:
    """Forge's own code holding the loop: computing, never sleeping."""
    deadline = time.monotonic() + 60
    while not any(r["event"] == "loop_stalled" for r in records):
        assert time.monotonic() < deadline, records
        sum(range(10_000))


async def test_a_stand_says_whether_the_loop_thread_was_computing_or_not() -> None:
    """Sleeping in the loop's thread uses no CPU; spinning uses about all of the stand."""
    slept, spun = [
        next(r for r in await stand(hold) if r["event"] == "loop_resumed")
        for hold in (hold_the_loop_until_seen, spin_until_seen)
    ]
    assert slept["cpu_s"] < slept["stood_s"] / 2
    assert spun["cpu_s"] > slept["cpu_s"]


def test_a_stall_record_names_the_innermost_frames_and_reads_no_source() -> None:
    """Source text would go into linecache for good: a weeks-long process must not collect it."""
    linecache.clearcache()

    def inner() -> str:
        return innermost_frames(sys._getframe())

    stack = inner()
    lines = stack.splitlines()
    assert lines[-1].endswith(", in inner")
    assert __file__ in lines[-1]
    assert len(lines) == STACK_FRAMES  # pytest's own frames lie further out
    assert linecache.cache == {}


async def test_a_loop_that_keeps_turning_is_never_reported() -> None:
    watch = LoopWatch(threshold_s=5.0, tick_s=0.01)
    with capture_logs() as records:
        watch.start()
        for _ in range(20):
            await asyncio.sleep(0.01)
        watch.stop()
    assert [r for r in records if r["event"].startswith("loop_")] == []
