"""Progress on stderr: plain lines off a terminal, one live line on it (issue item 7)."""

from __future__ import annotations

import asyncio
import io
from typing import Any

from forge.attempt.coordinates import Coordinate
from forge.attempt.record import AttemptRecord
from forge.lab.progress import ProgressDisplay
from forge.lab.scheduler import ProgressEvent
from forge.testing.clock import ManualClock

COORD = Coordinate(0, "t1", 1, "a")


def record(**fields: Any) -> AttemptRecord:
    return AttemptRecord(
        schema_version=1,
        task="t1",
        variant="a",
        repetition=1,
        attempt_id="t1.a.rep-1.x",
        formula_sha256="f" * 64,
        plan_sha256="p" * 64,
        pinned_model="m1",
        started_at="2026-01-01T00:00:00Z",
        **fields,
    )


def event(kind: str, done: int, **extra: object) -> ProgressEvent:
    return ProgressEvent(
        kind=kind,
        coordinate=COORD,
        done=done,
        total=4,
        accepted={"a": done, "b": 0},
        in_flight={"t1/b/rep-1": 995.0},
        **extra,  # type: ignore[arg-type]
    )


def test_plain_lines_when_not_a_terminal() -> None:
    stream = io.StringIO()
    display = ProgressDisplay(stream, ManualClock(), live=False)
    display(event("started", 0))
    display(event("recorded", 1, record=record(correct=True, elapsed_ms=1200)))
    display(ProgressEvent("status", None, 1, 4, {"a": 1, "b": 0}, {}, status="stopped"))
    assert stream.getvalue().splitlines() == [
        "[0/4] start t1/a/rep-1",
        "[1/4] t1/a/rep-1: accepted (1200 ms); accepted so far: a 1, b 0",
        "run stopped: 1/4 recorded",
    ]


async def test_live_line_shows_in_flight_elapsed_and_refreshes() -> None:
    stream = io.StringIO()
    clock = ManualClock(start=1000.0)
    display = ProgressDisplay(stream, clock, live=True)
    display.start()
    display(event("recorded", 1, record=record(correct=False, verified=True, outcome="completed")))
    assert "t1/a/rep-1: failed\n" in stream.getvalue()
    assert stream.getvalue().endswith("1/4 done | accepted a:1 b:0 | t1/b/rep-1 5s")
    await asyncio.sleep(0)
    assert clock.sleepers == 1
    clock.advance(1.0)
    for _ in range(3):
        await asyncio.sleep(0)
    assert stream.getvalue().endswith("t1/b/rep-1 6s")
    await display.stop()
    assert stream.getvalue().endswith("\r\x1b[K")


def test_plain_mode_prints_a_standing_note_when_it_appears_and_every_ten_seconds() -> None:
    stream = io.StringIO()
    clock = ManualClock(start=1000.0)
    display = ProgressDisplay(stream, clock, live=False)
    for second in range(0, 21):
        display.note(f"waiting for a Dask worker ({second} s)")
        clock.advance(1.0)
    display.note(None)
    display.note("waiting for a Dask worker (0 s)")
    assert stream.getvalue().splitlines() == [
        "waiting for a Dask worker (0 s)",
        "waiting for a Dask worker (10 s)",
        "waiting for a Dask worker (20 s)",
        "waiting for a Dask worker (0 s)",
    ]


def test_the_live_line_ends_with_the_note_until_it_is_cleared() -> None:
    stream = io.StringIO()
    display = ProgressDisplay(stream, ManualClock(start=1000.0), live=True)
    display.note("waiting for a Dask worker (0 s)")
    assert stream.getvalue().endswith("\r\x1b[Kwaiting for a Dask worker (0 s)")
    display(event("started", 0))
    display.note("waiting for a Dask worker (3 s)")
    assert stream.getvalue().endswith(
        "0/4 done | accepted a:0 b:0 | t1/b/rep-1 5s | waiting for a Dask worker (3 s)"
    )
    display.note(None)
    assert stream.getvalue().endswith("0/4 done | accepted a:0 b:0 | t1/b/rep-1 5s")
