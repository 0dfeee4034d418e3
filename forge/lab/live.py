"""A run as the `lab` subject shows it, kept from the scheduler's progress events. Pure.

`LiveRun` folds `ProgressEvent`s (and what only the supervisor knows: which runner holds an
attempt, its process tree, the run's exit code) into a `LabRun` row, and answers each change with
the keyless update to push (`forge.wire.lab`). A follower (the CLI) reads those updates back into
progress lines with `follow_step`, so a run followed over the socket prints what a run in the CLI
prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from forge.attempt.coordinates import Coordinate
from forge.attempt.record import AttemptRecord, known
from forge.lab.progress import Step
from forge.lab.report import outcome_class
from forge.lab.scheduler import ProgressEvent
from forge.wire.lab import LabAttempt, LabRun, RunStatus

Update = tuple[str, dict[str, Any]]
"""A keyless update: its variant and body."""


ENDED_RUNS_KEPT = 20
"""Ended runs the `lab` subject keeps showing (their records stay in their `--out`); a
supervisor that runs cohorts for weeks must not hold every one it ever ran."""


def runs_to_forget(rows: list[LabRun], kept: int = ENDED_RUNS_KEPT) -> list[str]:
    """The ended runs beyond the `kept` latest started, oldest first; running runs stay."""
    ended = sorted((row for row in rows if row.exit_code is not None), key=_started)
    return [row.run for row in ended[: max(0, len(ended) - kept)]]


def _started(row: LabRun) -> int:
    return row.started_ms


class LiveRun:
    def __init__(self, row: LabRun, order: list[Coordinate]) -> None:
        self.row = row
        self.order = order
        self._by_label = {attempt.label: attempt for attempt in row.attempts}

    @classmethod
    def begin(
        cls,
        *,
        run: str,
        cohort: str,
        source: str,
        out: str,
        hypothesis: str,
        digest: str,
        parallel: int,
        variants: list[str],
        order: list[Coordinate],
        now_ms: int,
    ) -> LiveRun:
        """A run that has not read its records yet: every attempt pending."""
        row = LabRun(
            run=run,
            cohort=cohort,
            source=source,
            out=out,
            hypothesis=hypothesis,
            digest=digest,
            parallel=parallel,
            status="running",
            started_ms=now_ms,
            done=0,
            total=len(order),
            accepted={name: 0 for name in variants},
            attempts=[
                LabAttempt(
                    label=c.label,
                    task=c.task,
                    variant=c.variant,
                    repetition=c.repetition,
                    state="pending",
                )
                for c in order
            ],
        )
        return cls(row, order)

    @property
    def ended(self) -> bool:
        return self.row.exit_code is not None

    def running(self) -> list[LabAttempt]:
        return [attempt for attempt in self.row.attempts if attempt.state == "running"]

    def apply(self, event: ProgressEvent, now_ms: int) -> list[Update]:
        """Fold one scheduler event in; the updates that tell holders about it."""
        row = self.row
        row.done, row.total, row.accepted = event.done, event.total, dict(event.accepted)
        if event.kind == "loaded":
            for coordinate, record in event.recorded:
                _record(self._by_label[coordinate.label], record)
            return [self.whole()]
        if event.coordinate is None:
            return []
        attempt = self._by_label[event.coordinate.label]
        if event.kind == "started":
            _reset(attempt)
            attempt.state, attempt.started_ms = "running", now_ms
        elif event.kind == "recorded" and event.record is not None:
            _record(attempt, event.record)
        else:
            return []
        return [self._attempt(attempt)]

    def assign(self, label: str, runner: str | None) -> list[Update]:
        """The runner holding a running attempt (None: it let go of it)."""
        attempt = self._by_label[label]
        if attempt.state != "running" or attempt.runner == runner:
            return []
        attempt.runner = runner
        return [self._attempt(attempt)]

    def processes(self, label: str, rows: list[dict[str, Any]] | None) -> list[Update]:
        """A running attempt's walked tree (the caller decides it moved enough to tell)."""
        attempt = self._by_label[label]
        if attempt.state != "running":
            return []
        attempt.processes = rows
        return [("lab_processes", {"run": self.row.run, "label": label, "processes": rows})]

    def end(
        self, status: RunStatus, stop_reason: str | None, abort_reason: str | None, code: int
    ) -> list[Update]:
        """The run finished: attempts still marked running were discarded (pending again)."""
        row = self.row
        for attempt in row.attempts:
            if attempt.state == "running":
                _reset(attempt)
        row.status, row.stop_reason, row.abort_reason = status, stop_reason, abort_reason
        row.exit_code = code
        return [self.whole()]

    def whole(self) -> Update:
        return ("lab_run", {"run": msgspec.to_builtins(self.row)})

    def _attempt(self, attempt: LabAttempt) -> Update:
        row = self.row
        return (
            "lab_attempt",
            {
                "run": row.run,
                "attempt": msgspec.to_builtins(attempt),
                "done": row.done,
                "total": row.total,
                "accepted": row.accepted,
            },
        )


def _reset(attempt: LabAttempt) -> None:
    attempt.state = "pending"
    attempt.runner = attempt.started_ms = attempt.elapsed_ms = None
    attempt.outcome = attempt.correct = attempt.processes = None


def _record(attempt: LabAttempt, record: AttemptRecord) -> None:
    _reset(attempt)
    attempt.state = "recorded"
    attempt.elapsed_ms = known(record.elapsed_ms)
    attempt.outcome = outcome_class(record)
    attempt.correct = bool(record.correct) and not record.invalid


class Follower:
    """The CLI's side: a run's updates read back into progress steps, one run at a time."""

    def __init__(self, run: str, now_ms: float, monotonic: float) -> None:
        self.run = run
        self._offset = monotonic - now_ms / 1000
        """Adds to a Unix-seconds time to give this process's monotonic time."""
        self.running: dict[str, float] = {}
        self.ended: LabRun | None = None

    def step(self, variant: str, body: Mapping[str, Any]) -> Step | None:
        """The step an update means for the display, if any; `ended` is set by the last one."""
        if body.get("run") != self.run and variant != "lab_run":
            return None
        if variant == "lab_attempt":
            attempt = msgspec.convert(body["attempt"], LabAttempt)
            if attempt.state == "running" and attempt.started_ms is not None:
                kind = "started" if attempt.label not in self.running else "running"
                self.running[attempt.label] = attempt.started_ms / 1000 + self._offset
            else:
                self.running.pop(attempt.label, None)
                kind = "recorded" if attempt.state == "recorded" else "discarded"
            return Step(
                kind=kind,
                label=attempt.label,
                done=body["done"],
                total=body["total"],
                accepted=body["accepted"],
                in_flight=dict(self.running),
                outcome=attempt.outcome,
                elapsed_ms=attempt.elapsed_ms,
            )
        if variant == "lab_run":
            run = msgspec.convert(body["run"], LabRun)
            if run.run != self.run or run.exit_code is None:
                return None
            self.ended = run
            self.running.clear()
            return Step(
                kind="status",
                label=None,
                done=run.done,
                total=run.total,
                accepted=run.accepted,
                in_flight={},
                status=run.status,
            )
        return None
