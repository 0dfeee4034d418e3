"""The cohort scheduler: starts coordinates in order, at most N at a time, and keeps the record.

Policy lives here (resume, stop rules, abort, interrupt); running one attempt is an `Executor`
(in-process, an attempt-runner worker, or a Dask worker), so the rules are the same whatever runs
the attempt. After every recorded attempt and every status change, report.json and report.md are
rewritten atomically; attempt.json is written here, last, so a discarded attempt never looks done.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from forge.attempt.cohort import Cohort
from forge.attempt.coordinates import Coordinate, coordinates
from forge.attempt.errors import LabRefusal, RunAborted
from forge.attempt.layout import ATTEMPTS_DIR, INPUTS_DIR
from forge.attempt.record import AttemptRecord, cost_basis, dumps_record, known, read_record
from forge.attempt.run import discard_attempt_dir, iso_utc
from forge.attempt.settings import LabSettings
from forge.attempt.spec import AttemptSpec
from forge.clock import Clock
from forge.files import write_atomic
from forge.lab import history
from forge.lab.activation import verify_inputs
from forge.lab.history import HISTORY_FILE
from forge.lab.report import RunState, build_report, dumps_report, render_markdown
from forge.lab.report_html import PAGE, excerpts_of, render_html
from forge.logs import get_logger

SUPERSEDED_DIR = "superseded"
RECORD_FILE = "attempt.json"

Executor = Callable[[AttemptSpec], Coroutine[Any, Any, AttemptRecord]]
"""Runs one attempt to its record; cancelling the awaitable kills and discards the attempt."""
Progress = Callable[["ProgressEvent"], None]

log = get_logger(__name__)


@dataclass(frozen=True)
class ProgressEvent:
    kind: str
    """`loaded` (once, after a resume read the records already there), `started`, `recorded`
    or `status` (the run ended)."""
    coordinate: Coordinate | None
    done: int
    total: int
    accepted: dict[str, int]
    in_flight: dict[str, float]
    """Label -> monotonic start time."""
    record: AttemptRecord | None = None
    status: str = "running"
    recorded: tuple[tuple[Coordinate, AttemptRecord], ...] = ()
    """`loaded` only: every record already there, in coordinate order."""


@dataclass
class RunConfig:
    cohort: Cohort
    out: Path
    source: Path
    origin: str | None
    approval: dict[str, Any]
    caller_env: dict[str, str]
    settings: LabSettings
    parallel: int = 1
    keep_workspaces: bool = False
    runs_note: dict[str, Any] = field(default_factory=dict)
    hidden: tuple[str, ...] = ()
    """Paths the recipe's sandbox never mounts (`AttemptSpec.hidden`)."""


def ran_on_insecure_cluster(runs_log: str) -> bool:
    """Whether a line of runs.jsonl says its invocation used --insecure-cluster (a line cut
    short by a crash counts for nothing)."""
    for line in runs_log.splitlines():
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if isinstance(entry, dict) and entry.get("insecureCluster") is True:
                return True
    return False


class CohortRun:
    def __init__(
        self, config: RunConfig, executor: Executor, clock: Clock, progress: Progress | None = None
    ) -> None:
        self.config = config
        self.executor = executor
        self.clock = clock
        self.progress = progress
        self.order = coordinates(config.cohort.spec)
        self.records: dict[int, AttemptRecord] = {}
        self.in_flight: dict[int, asyncio.Task[AttemptRecord]] = {}
        self.started_at: dict[int, float] = {}
        self.stop_reason: str | None = None
        self.abort_reason: str | None = None
        self.interrupted_by: str | None = None
        self.insecure_cluster = False
        """Whether some invocation of this run (runs.jsonl) used --insecure-cluster."""
        self.history: list[dict[str, Any]] = []
        """The run's events (`forge.lab.history`), earlier invocations' first."""
        self._announced = False
        """Whether this invocation's `started` event is in the history: it is written with the
        first thing the invocation does, so one that finds the run finished changes nothing."""
        self._changed = asyncio.Event()

    # -- public ------------------------------------------------------------------------------

    async def run(self) -> RunState:
        """Run every missing coordinate; returns the final state (never raises RunAborted)."""
        self._append_runs_log()
        self._load_history()
        self._load_records()
        self._emit("loaded", None)
        self._check_stop_rules()
        try:
            self._write_report("running")
            await self._schedule()
        except RunAborted as error:
            self.abort_reason = error.reason
        await self._drain()
        status = self._final_status()
        if self._announced:
            self._note("ended", status=status, reason=self.abort_reason)
        with contextlib.suppress(RunAborted):
            self._write_report(status)
        self._emit("status", None, status=status)
        return self._state(status)

    def interrupt(self, signal_name: str) -> None:
        """SIGINT/SIGTERM: start nothing more; in-flight attempts are cancelled and discarded."""
        if self.interrupted_by is None:
            self.interrupted_by = signal_name
            self.abort_reason = f"interrupted by {signal_name}"
            log.info("lab_interrupted", signal=signal_name)
        self._cancel_in_flight()
        self._changed.set()

    # -- records -----------------------------------------------------------------------------

    def _attempt_dir(self, coordinate: Coordinate) -> Path:
        return self.config.out / ATTEMPTS_DIR / coordinate.rel_dir

    def _load_records(self) -> None:
        """Complete records count as done; a directory without one is cleared for a re-run, with
        the private trees its `work` link names (a host that died mid-attempt left them)."""
        for coordinate in self.order:
            directory = self._attempt_dir(coordinate)
            record = _read_record(directory / RECORD_FILE)
            if record is not None:
                self.records[coordinate.index] = record
            elif directory.exists():
                discard_attempt_dir(directory)
                self._note("cleared", attempt=coordinate.label)

    def _supersede(self, coordinate: Coordinate) -> float:
        """Move a resumable (provider-unavailable) record aside; return the cost it carried."""
        record = self.records.pop(coordinate.index, None)
        if record is None:
            return 0.0
        root = self.config.out / SUPERSEDED_DIR / coordinate.rel_dir
        number = 1
        while (root / str(number)).exists():
            number += 1
        (root / str(number)).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(self._attempt_dir(coordinate)), root / str(number))
        self._note("superseded", attempt=coordinate.label, costUsd=known(record.cost_usd))
        return record.reported_cost() + record.superseded_cost()

    def _pending(self) -> list[Coordinate]:
        return [
            c
            for c in self.order
            if c.index not in self.records
            or self.records[c.index].invalid == "provider-unavailable"
        ]

    # -- scheduling --------------------------------------------------------------------------

    async def _schedule(self) -> None:
        config = self.config
        for coordinate in self._pending():
            while len(self.in_flight) >= config.parallel and not self._halted():
                await self._wait_for_change()
            if self._halted():
                return
            limit = config.cohort.spec.stop.max_attempts
            resumable = 1 if coordinate.index in self.records else 0
            counted = len(self.records) + len(self.in_flight) - resumable
            if limit is not None and counted >= limit:
                self.stop_reason = f"maxAttempts {limit} reached"
                return
            await asyncio.to_thread(verify_inputs, config.out / INPUTS_DIR, config.cohort.pins())
            superseded = self._supersede(coordinate) if coordinate.index in self.records else 0.0
            self._start(coordinate, superseded)
        while self.in_flight and not self._halted_hard():
            await self._wait_for_change()

    def _start(self, coordinate: Coordinate, superseded_cost: float) -> None:
        config = self.config
        task = next(t for t in config.cohort.tasks if t.spec.name == coordinate.task)
        variant = next(v for v in config.cohort.variants if v.spec.name == coordinate.variant)
        spec = AttemptSpec(
            coordinate=coordinate,
            attempt_id=f"{coordinate.task}.{coordinate.variant}.rep-{coordinate.repetition}.{uuid.uuid4().hex[:12]}",
            attempt_dir=self._attempt_dir(coordinate),
            inputs_dir=config.out / INPUTS_DIR,
            pins=config.cohort.pins(),
            task=task,
            variant=variant,
            source=config.source,
            origin=config.origin,
            caller_env=config.caller_env,
            settings=config.settings,
            keep_workspaces=config.keep_workspaces,
            parallel=config.parallel,
            hidden=config.hidden,
        )
        self._announce()
        spec.attempt_dir.mkdir(parents=True)
        self.started_at[coordinate.index] = self.clock.monotonic()
        task_handle = asyncio.create_task(self.executor(spec), name=coordinate.label)
        self.in_flight[coordinate.index] = task_handle
        task_handle.add_done_callback(lambda t: self._finished(coordinate, t, superseded_cost))
        log.info("lab_attempt_started", coordinate=coordinate.label)
        self._emit("started", coordinate)

    def _finished(
        self, coordinate: Coordinate, task: asyncio.Task[AttemptRecord], superseded: float
    ) -> None:
        self.in_flight.pop(coordinate.index, None)
        self._changed.set()
        if task.cancelled():  # an attempt cancelled before it ran has no trees to discard them
            self._discard(coordinate, self.abort_reason or "cancelled")
            return
        error = task.exception()
        if error is not None:
            if self.abort_reason is None:
                self.abort_reason = (
                    error.reason
                    if isinstance(error, RunAborted)
                    else f"attempt {coordinate.label} failed: {error}"
                )
            self._cancel_in_flight()
            self._discard(coordinate, str(error) or type(error).__name__)
            return
        if self._halted_hard():
            self._discard(coordinate, self.abort_reason or "aborted")
            return
        record = task.result()
        if superseded:
            record.superseded_cost_usd = round(superseded, 6)
        write_atomic(self._attempt_dir(coordinate) / RECORD_FILE, dumps_record(record))
        self.records[coordinate.index] = record
        log.info("lab_attempt_recorded", coordinate=coordinate.label, outcome=known(record.outcome))
        self._check_stop_rules()
        try:
            self._write_report("running")
        except RunAborted as failure:
            self.abort_reason = failure.reason
            self._cancel_in_flight()
        self._emit("recorded", coordinate, record=record)

    async def _wait_for_change(self) -> None:
        self._changed.clear()
        await self._changed.wait()

    def _halted(self) -> bool:
        return self.stop_reason is not None or self._halted_hard()

    def _halted_hard(self) -> bool:
        return self.abort_reason is not None

    def _cancel_in_flight(self) -> None:
        """Cancel each in-flight attempt once: a second cancel would cut its own clean-up short."""
        for task in self.in_flight.values():
            if not task.cancelling():
                task.cancel()

    async def _drain(self) -> None:
        """Stop: let in-flight attempts finish. Abort: cancel them (they discard themselves)."""
        if self._halted_hard():
            self._cancel_in_flight()
        while self.in_flight:
            await asyncio.gather(*self.in_flight.values(), return_exceptions=True)
            await asyncio.sleep(0)

    # -- history -----------------------------------------------------------------------------

    def _load_history(self) -> None:
        path = self.config.out / HISTORY_FILE
        if path.exists():
            self.history = history.parse(path.read_text(encoding="utf-8", errors="replace"))

    def _announce(self) -> None:
        """This invocation's `started` event, once, before its first other event."""
        if self._announced:
            return
        self._announced = True
        self._append_event(
            {"event": "started", "resume": bool(self.config.runs_note.get("resume"))}
            | {"parallel": self.config.parallel}
        )

    def _note(self, event: str, **details: Any) -> None:
        self._announce()
        self._append_event({"event": event, **details})

    def _append_event(self, event: dict[str, Any]) -> None:
        event = {"at": iso_utc(self.clock.time()), **event}
        self.history.append(event)
        with open(self.config.out / HISTORY_FILE, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")

    def _discard(self, coordinate: Coordinate, why: str) -> None:
        """An attempt that will not be recorded leaves no folder, and the history says so."""
        discard_attempt_dir(self._attempt_dir(coordinate))
        self._note("discarded", attempt=coordinate.label, why=why)

    # -- stop rules --------------------------------------------------------------------------

    def _check_stop_rules(self) -> None:
        if self.stop_reason is not None:
            return
        spec = self.config.cohort.spec
        for variant in spec.variants:
            first = next(c for c in self.order if c.variant == variant.name)
            record = self.records.get(first.index)
            if record is not None and record.invalid == "model-mismatch":
                self.stop_reason = (
                    f"variant {variant.name} was not served its pinned model "
                    f"({record.pinned_model} → {known(record.served_model)})"
                )
                return
        limit = spec.stop.max_cost_usd
        costed = [r for r in self.records.values() if known(r.cost_usd) is not None]
        total = sum(r.reported_cost() for r in costed) + sum(
            r.superseded_cost() for r in self.records.values()
        )
        if limit is not None and costed and total >= limit:
            basis = cost_basis(known(r.cost_basis) for r in costed)
            self.stop_reason = (
                f"maxCostUSD {limit:g} reached: reported cost {total:.6g} USD (basis: {basis})"
            )

    def _final_status(self) -> str:
        if self.abort_reason is not None:
            return "aborted"
        if all(c.index in self.records for c in self.order):
            return "complete"
        return "stopped"

    # -- report ------------------------------------------------------------------------------

    def _state(self, status: str) -> RunState:
        return RunState(
            status=status,
            stop_reason=self.stop_reason if status != "complete" else None,
            abort_reason=self.abort_reason,
            approval=self.config.approval,
            insecure_cluster=self.insecure_cluster,
            history=tuple(self.history),
        )

    def ordered_records(self) -> list[AttemptRecord]:
        return [self.records[c.index] for c in self.order if c.index in self.records]

    def _write_report(self, status: str) -> None:
        spec = self.config.cohort.spec
        records = self.ordered_records()
        report = build_report(spec, self._state(status), records)
        try:
            if "report-save" in self.config.settings.forced_failures and records:
                raise OSError("forced report-save failure (test hook)")
            write_atomic(self.config.out / "report.json", dumps_report(report).encode())
            write_atomic(
                self.config.out / "report.md", render_markdown(spec, report, records).encode()
            )
            if status != "running":
                write_atomic(self.config.out / PAGE, self._html(report, records))
        except OSError as error:
            raise RunAborted(f"report save failed: {error}") from error

    def _html(self, report: dict[str, Any], records: list[AttemptRecord]) -> bytes:
        """report.html, written once an invocation ends: it reads every attempt's files."""
        return render_html(report, records, excerpts_of(self.config.out, records)).encode()

    def _append_runs_log(self) -> None:
        line = json.dumps(
            {
                "startedAt": self.clock.time(),
                "parallel": self.config.parallel,
                **self.config.runs_note,
            }
        )
        with open(self.config.out / "runs.jsonl", "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
        runs = (self.config.out / "runs.jsonl").read_text(encoding="utf-8")
        self.insecure_cluster = ran_on_insecure_cluster(runs)

    def _recorded(self) -> tuple[tuple[Coordinate, AttemptRecord], ...]:
        return tuple((c, self.records[c.index]) for c in self.order if c.index in self.records)

    def _emit(
        self,
        kind: str,
        coordinate: Coordinate | None,
        *,
        record: AttemptRecord | None = None,
        status: str = "running",
    ) -> None:
        if self.progress is None:
            return
        accepted = {v.name: 0 for v in self.config.cohort.spec.variants}
        for r in self.records.values():
            if r.correct and not r.invalid:
                accepted[r.variant] += 1
        self.progress(
            ProgressEvent(
                kind=kind,
                coordinate=coordinate,
                done=len(self.records),
                total=len(self.order),
                accepted=accepted,
                in_flight={self.order[i].label: self.started_at[i] for i in self.in_flight},
                record=record,
                status=status,
                recorded=tuple(
                    (c, self.records[c.index]) for c in self.order if c.index in self.records
                )
                if kind == "loaded"
                else (),
            )
        )


def _read_record(path: Path) -> AttemptRecord | None:
    """A complete record, or None (absent, torn, unfinished); one this forge cannot read refuses."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    try:
        return read_record(document)
    except msgspec.ValidationError as error:
        raise LabRefusal(f"{path}: not an attempt record this forge reads: {error}") from None


def exit_code(state: RunState, records: list[AttemptRecord]) -> int:
    """O-1: 0 all correct, 2 some attempt not correct or invalid, 1 aborted."""
    if state.status == "aborted":
        return 1
    return 0 if all(r.correct and not r.invalid for r in records) else 2
