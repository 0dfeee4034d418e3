"""The record phase: `attempt.json`'s record, built once from the phases' results.

A field no phase reached (no coding after a failed setup, no capture figures after a failed
capture) is `UNSET`, so it is absent from the file (see `forge.attempt.record`).
"""

from __future__ import annotations

from dataclasses import dataclass

from msgspec import UNSET

from forge.attempt.egress.log import EgressRecord
from forge.attempt.phases.capture import Captured
from forge.attempt.phases.context import Meter
from forge.attempt.phases.flakes import Flakes
from forge.attempt.phases.score import Scored
from forge.attempt.phases.solve import Solved
from forge.attempt.phases.workspace import Workspace
from forge.attempt.record import SCHEMA_VERSION, AttemptRecord
from forge.attempt.spec import AttemptSpec


@dataclass(frozen=True)
class Ending:
    """What is known once the attempt let go of its trees and proxy."""

    egress: EgressRecord | None
    """Every destination a networked attempt's steps tried (None without the proxy)."""
    cleanup_error: str | None
    finished_at: str
    elapsed_ms: int


def attempt_record(
    spec: AttemptSpec,
    started_at: str,
    workspace: Workspace,
    solved: Solved,
    captured: Captured,
    scored: Scored,
    flakes: Flakes,
    meter: Meter,
    ending: Ending,
) -> AttemptRecord:
    """The attempt's record from every phase's result."""
    coding, change = solved.coding, captured.change
    limit_note = meter.limit_note()
    error = scored.error if scored.error is not None else solved.error
    return AttemptRecord(
        schema_version=SCHEMA_VERSION,
        task=spec.coordinate.task,
        variant=spec.coordinate.variant,
        repetition=spec.coordinate.repetition,
        attempt_id=spec.attempt_id,
        formula_sha256=spec.variant.spec.formula_sha256,
        plan_sha256=spec.task.spec.plan_sha256,
        pinned_model=spec.variant.formula.coding.model,
        started_at=started_at,
        parallel=spec.parallel if spec.parallel > 1 else UNSET,
        seal=workspace.seal,
        egress=ending.egress if ending.egress is not None else UNSET,
        outcome=solved.outcome,
        timed_out=coding.timed_out if coding else UNSET,
        invocations=list(coding.invocations) if coding else UNSET,
        harness_ms=coding.harness_ms if coding else UNSET,
        cost_usd=coding.cost_usd if coding else UNSET,
        cost_basis=coding.cost_basis if coding else UNSET,
        models=coding.models if coding else UNSET,
        resumed=coding.resumed if coding else UNSET,
        harness_output=solved.harness_output if solved.harness_output is not None else UNSET,
        transcript=solved.transcript if solved.transcript is not None else UNSET,
        served_model=solved.served_model if solved.served_model is not None else UNSET,
        transient_exhausted=(
            list(solved.transient_exhausted) if solved.transient_exhausted is not None else UNSET
        ),
        changed_files=change.changed_files if change else UNSET,
        changes_diff_sha256=change.diff_sha256 if change else UNSET,
        changes_diff_bytes=change.diff_bytes if change else UNSET,
        changes_diff_truncated=change.diff_truncated if change else UNSET,
        changes_error=captured.error,
        scope_ok=not change.violations if change else UNSET,
        scope_violations=list(change.violations) if change else UNSET,
        verified=scored.verified,
        hidden_acceptance=scored.hidden_acceptance,
        required_checks_pass=scored.required_checks_pass,
        correct=scored.correct,
        correct_excluding_base_flakes=flakes.correct_excluding_base_flakes,
        regression_failed_tests=(
            list(flakes.failed_tests) if flakes.failed_tests is not None else UNSET
        ),
        regression_failed_tests_truncated=True if flakes.truncated else UNSET,
        regression_failures=list(flakes.failures) if flakes.failures is not None else UNSET,
        failed_check_output=[*solved.failed, *scored.failed],
        peak_rss_bytes=meter.peak_rss,
        cpu_seconds=round(meter.cpu_seconds, 3),
        stray_processes_killed=meter.strays,
        notes=[*solved.notes, *([limit_note] if limit_note is not None else [])],
        error=error,
        invalid=solved.invalid,
        cleanup_error=ending.cleanup_error if ending.cleanup_error is not None else UNSET,
        finished_at=ending.finished_at,
        elapsed_ms=ending.elapsed_ms,
    )
