"""The `lab` subject's run rows and the CLI's reading of them, without processes (X3): the
supervisor folds scheduler events into updates, a follower turns those updates back into the
progress lines a run in the CLI prints."""

from __future__ import annotations

import io

from forge.attempt.coordinates import Coordinate
from forge.lab.live import Follower, LiveRun, Update, runs_to_forget
from forge.lab.progress import ProgressDisplay, step_of
from forge.lab.scheduler import ProgressEvent
from forge.testing.clock import ManualClock

from .test_progress import record

ORDER = [Coordinate(0, "t1", 1, "a"), Coordinate(1, "t1", 1, "b")]
NOW_MS = 1_700_000_000_000


def live() -> LiveRun:
    return LiveRun.begin(
        run="r1",
        cohort="/c/cohort.json",
        source="/src",
        out="/out",
        hypothesis="h",
        digest="d" * 64,
        parallel=2,
        variants=["a", "b"],
        order=ORDER,
        now_ms=NOW_MS,
    )


def event(kind: str, index: int | None, done: int, **extra: object) -> ProgressEvent:
    return ProgressEvent(
        kind=kind,
        coordinate=None if index is None else ORDER[index],
        done=done,
        total=2,
        accepted={"a": done, "b": 0},
        in_flight={},
        **extra,  # type: ignore[arg-type]
    )


def states(run: LiveRun) -> list[tuple[str, str]]:
    return [(a.label, a.state) for a in run.row.attempts]


def test_a_resume_shows_its_records_then_attempts_start_run_and_are_recorded() -> None:
    run = live()
    assert states(run) == [("t1/a/rep-1", "pending"), ("t1/b/rep-1", "pending")]
    done = record(correct=True, elapsed_ms=900)
    [(variant, body)] = run.apply(event("loaded", None, 1, recorded=((ORDER[0], done),)), NOW_MS)
    assert variant == "lab_run"
    assert body["run"]["attempts"][0]["outcome"] == "accepted"
    assert states(run) == [("t1/a/rep-1", "recorded"), ("t1/b/rep-1", "pending")]

    [(variant, body)] = run.apply(event("started", 1, 1), NOW_MS + 5)
    assert (variant, body["attempt"]["state"], body["done"]) == ("lab_attempt", "running", 1)
    assert body["attempt"]["started_ms"] == NOW_MS + 5
    assert run.assign("t1/b/rep-1", "lab-r1-1")[0][1]["attempt"]["runner"] == "lab-r1-1"
    assert run.assign("t1/b/rep-1", "lab-r1-1") == []
    rows = [{"pid": 7, "ppid": 1, "name": "python3"}]
    assert run.processes("t1/b/rep-1", rows) == [
        ("lab_processes", {"run": "r1", "label": "t1/b/rep-1", "processes": rows})
    ]
    assert run.processes("t1/a/rep-1", rows) == []

    [(_, body)] = run.apply(event("recorded", 1, 2, record=record(outcome="failed")), NOW_MS)
    assert body["attempt"]["state"] == "recorded"
    assert body["attempt"]["runner"] is None
    assert body["attempt"]["processes"] is None
    [(variant, body)] = run.end("complete", None, None, 2)
    assert (variant, body["run"]["status"], body["run"]["exit_code"]) == ("lab_run", "complete", 2)
    assert run.ended


def test_a_stop_puts_running_attempts_back_to_pending() -> None:
    run = live()
    run.apply(event("loaded", None, 0), NOW_MS)
    run.apply(event("started", 0, 0), NOW_MS)
    run.assign("t1/a/rep-1", "lab-r1-1")
    [(_, body)] = run.end("aborted", None, "interrupted by SIGINT", 130)
    assert [a["state"] for a in body["run"]["attempts"]] == ["pending", "pending"]
    assert body["run"]["abort_reason"] == "interrupted by SIGINT"
    assert body["run"]["attempts"][0]["runner"] is None


def test_a_follower_prints_what_the_cli_prints_for_the_same_events() -> None:
    """The same events, shown directly and through the run's updates, give the same lines."""
    events = [
        event("loaded", None, 0),
        event("started", 0, 0),
        event("started", 1, 0),
        event("recorded", 0, 1, record=record(correct=True, elapsed_ms=1200)),
        event("recorded", 1, 1, record=record(outcome="failed", elapsed_ms=800)),
        event("status", None, 1, status="complete"),
    ]
    direct = io.StringIO()
    display = ProgressDisplay(direct, ManualClock(), live=False)
    for one in events:
        display(one)

    run = live()
    updates: list[Update] = []
    for one in events[:-1]:
        updates += run.apply(one, NOW_MS)
    updates += run.assign("t1/a/rep-1", "lab-r1-1")
    updates += run.end("complete", None, None, 2)
    followed = io.StringIO()
    display = ProgressDisplay(followed, ManualClock(), live=False)
    follower = Follower("r1", NOW_MS, 50.0)
    for variant, body in updates:
        step = follower.step(variant, body)
        if step is not None:
            display.show(step)
    assert followed.getvalue() == direct.getvalue()
    assert follower.ended is not None
    assert follower.ended.exit_code == 2
    assert step_of(events[3]).outcome == "accepted"


def test_a_follower_ignores_other_runs_and_keeps_in_flight_times_on_its_clock() -> None:
    run = live()
    follower = Follower("other", NOW_MS, 50.0)
    assert all(follower.step(v, b) is None for v, b in run.apply(event("started", 0, 0), NOW_MS))
    mine = Follower("r1", NOW_MS + 3000, 50.0)
    [(variant, body)] = run.apply(event("started", 1, 0), NOW_MS)
    step = mine.step(variant, body)
    assert step is not None
    assert step.kind == "started"
    assert step.in_flight == {"t1/b/rep-1": 47.0}


def test_the_subject_forgets_ended_runs_beyond_the_latest_kept_and_never_a_running_one() -> None:
    rows = []
    for n in range(6):
        row = live().row
        row.run, row.started_ms = f"r{n}", NOW_MS + n
        if n != 1:  # r1 is still running
            row.exit_code = 0
        rows.append(row)
    rows.reverse()  # the order kept does not matter: starts decide
    assert runs_to_forget(rows, kept=3) == ["r0", "r2"]
    assert runs_to_forget(rows, kept=5) == []
    assert runs_to_forget(rows, kept=0) == ["r0", "r2", "r3", "r4", "r5"]
