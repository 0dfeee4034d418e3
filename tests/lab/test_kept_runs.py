"""The runs a supervisor keeps in its state directory: read back as they were saved, a run its
killed predecessor left running read back as aborted (exit 1, resumable), and a file there that
is not a run's row (another name, bad JSON, another run's row) neither listed nor fatal."""

from __future__ import annotations

from pathlib import Path

from forge.lab.kept_runs import LOST_EXIT, LOST_REASON, forget, load, save
from forge.lab.live import LiveRun
from forge.wire.lab import LabAttempt, LabRun


def row(run: str, started_ms: int, **fields: object) -> LabRun:
    attempt = LabAttempt(
        label="t1/a/rep-1",
        task="t1",
        variant="a",
        repetition=1,
        state="running",
        runner="lab-x-1",
        started_ms=started_ms,
        processes=[{"pid": 7}],
    )
    values: dict[str, object] = {
        "run": run,
        "cohort": "/c/cohort.json",
        "source": "/src",
        "out": "/out",
        "hypothesis": "b fixes more",
        "digest": "d",
        "parallel": 1,
        "status": "running",
        "started_ms": started_ms,
        "done": 0,
        "total": 1,
        "accepted": {"a": 0},
        "attempts": [attempt],
        **fields,
    }
    return LabRun(**values)  # type: ignore[arg-type]


def test_runs_come_back_in_start_order_and_a_lost_one_is_aborted(tmp_path: Path) -> None:
    ended = LiveRun(row("bbbbbbbbbbbb", 2000), [])
    ended.end("complete", None, None, 2)
    save(tmp_path, ended.row)
    save(tmp_path, row("aaaaaaaaaaaa", 1000))  # its supervisor was killed mid-run
    loaded = load(tmp_path)
    assert [live.row.run for live in loaded] == ["aaaaaaaaaaaa", "bbbbbbbbbbbb"]
    lost, finished = (live.row for live in loaded)
    assert (lost.status, lost.exit_code, lost.abort_reason) == ("aborted", LOST_EXIT, LOST_REASON)
    assert lost.attempts[0].state == "pending"
    assert (finished.status, finished.exit_code) == ("complete", 2)
    assert finished.attempts[0].processes is None  # a live tree means nothing once read back
    forget(tmp_path, "aaaaaaaaaaaa")
    assert [live.row.run for live in load(tmp_path)] == ["bbbbbbbbbbbb"]


def test_files_that_are_not_a_runs_row_are_skipped(tmp_path: Path) -> None:
    save(tmp_path, row("cccccccccccc", 1))
    (tmp_path / "dddddddddddd.json").write_text("{not json")
    (tmp_path / "eeeeeeeeeeee.json").write_bytes((tmp_path / "cccccccccccc.json").read_bytes())
    (tmp_path / "notes.json").write_text("{}")
    assert [live.row.run for live in load(tmp_path)] == ["cccccccccccc"]
    assert load(tmp_path / "missing") == []
