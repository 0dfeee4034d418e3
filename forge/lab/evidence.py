"""Finished attempts as learning evidence: their records, their Formula snapshot, their changes.

A cohort run (`<out>`) keeps each attempt's `attempt.json`, `changes.json` and `changes.diff`, and
the exact Formula bytes it ran under `inputs/` (pinned in `activation.json`). Learn accepts a
record only when it is finished and valid, its Formula snapshot is intact, and its captured
changes still match their recorded hash; anything else is refused with the reason.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from forge.attempt.errors import LabRefusal
from forge.attempt.layout import ATTEMPTS_DIR, INPUTS_DIR
from forge.attempt.record import AttemptRecord, known, read_record
from forge.lab.activation import ACTIVATION_FILE
from forge.lab.labstate import registered_runs
from forge.lab.recurrence import RECENT_RECORDS

RECORD_FILE = "attempt.json"


class DamagedRecord(LabRefusal):
    """A record that exists but cannot be read or decoded: the evidence a person points learn
    at is damaged (skipped and reported once when scanning)."""


@dataclass(frozen=True)
class Finished:
    attempt_dir: Path
    run_dir: Path
    record: AttemptRecord
    refusal: str | None
    """Why learn would refuse this record; None when it is acceptable evidence."""


def run_of(attempt_dir: Path) -> Path:
    """`<out>` of `<out>/attempts/<task>/<variant>/rep-<n>`."""
    return attempt_dir.parents[3]


def read_finished(attempt_dir: Path, snapshots: dict[tuple[Path, str], bool]) -> Finished | None:
    """The attempt's finished record with learn's verdict; None when it never finished."""
    try:
        document = json.loads((attempt_dir / RECORD_FILE).read_text(encoding="utf-8"))
        record = read_record(document)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, msgspec.ValidationError) as error:
        raise DamagedRecord(f"{attempt_dir / RECORD_FILE}: {error}") from None
    if record is None:
        return None
    run = run_of(attempt_dir)
    return Finished(attempt_dir, run, record, _refusal(attempt_dir, run, record, snapshots))


def finished_attempt(attempt_dir: Path) -> Finished:
    """The attempt as learning evidence, refusing one that is pending or cannot be read."""
    try:
        item = read_finished(attempt_dir, {})
    except DamagedRecord as error:
        raise LabRefusal(f"damaged evidence: {error}") from None
    if item is None:
        raise LabRefusal(f"{attempt_dir}: the attempt is pending (no finished record)")
    return item


def _refusal(
    attempt_dir: Path, run: Path, record: AttemptRecord, snapshots: dict[tuple[Path, str], bool]
) -> str | None:
    if known(record.invalid):
        return f"invalid attempt ({record.invalid})"
    key = (run, record.formula_sha256)
    if key not in snapshots:
        snapshots[key] = snapshot(run, record.formula_sha256) is not None
    if not snapshots[key]:
        return "damaged Formula snapshot (its inputs copy is missing or does not match its pin)"
    pinned = known(record.changes_diff_sha256)
    if pinned is not None:
        try:
            diff = (attempt_dir / "changes.diff").read_bytes()
        except OSError:
            return "damaged evidence: changes.diff is missing"
        if hashlib.sha256(diff).hexdigest() != pinned:
            return "damaged evidence: changes.diff does not match changesDiffSha256"
    return None


def snapshot(run: Path, sha: str) -> bytes | None:
    """The exact Formula bytes a run pinned with `sha`, verified; None when absent or damaged."""
    try:
        pins = json.loads((run / ACTIVATION_FILE).read_text(encoding="utf-8"))["inputs"]
        rel = next(path for path, pinned in pins.items() if pinned == sha)
        data = (run / INPUTS_DIR / rel).read_bytes()
    except (OSError, ValueError, KeyError, TypeError, StopIteration):
        return None
    return data if hashlib.sha256(data).hexdigest() == sha else None


def attempts_of(path: Path, variant: str | None) -> list[Path]:
    """The attempt directories a `forge learn` argument names: one attempt, or a run's."""
    absolute = path.absolute()
    in_run = len(absolute.parents) > 3 and absolute.parents[2].name == ATTEMPTS_DIR
    if (path / RECORD_FILE).is_file() or (in_run and path.is_dir()):
        return [path]
    if (path / ACTIVATION_FILE).is_file():
        pattern = f"*/{variant}/rep-*" if variant else "*/*/rep-*"
        return sorted(p for p in (path / ATTEMPTS_DIR).glob(pattern) if p.is_dir())
    raise LabRefusal(f"{path}: not a cohort run (no {ACTIVATION_FILE}) nor an attempt directory")


def recent_finished(lab: Path) -> tuple[list[Finished], list[str]]:
    """The finished records among the Lab's most recently modified ones, and one diagnostic
    line per record that could not be read."""
    found: list[tuple[float, Path]] = []
    for run in registered_runs(lab):
        for record_path in Path(run.out).glob(f"{ATTEMPTS_DIR}/*/*/rep-*/{RECORD_FILE}"):
            try:
                found.append((record_path.stat().st_mtime, record_path.parent))
            except OSError:
                continue
    found.sort(key=lambda item: item[0], reverse=True)
    finished: list[Finished] = []
    problems: list[str] = []
    snapshots: dict[tuple[Path, str], bool] = {}
    for _, attempt_dir in found[:RECENT_RECORDS]:
        try:
            item = read_finished(attempt_dir, snapshots)
        except DamagedRecord as error:
            problems.append(f"skipped an unreadable record: {error}")
            continue
        if item is not None:
            finished.append(item)
    return finished, problems


def attempt_evidence(item: Finished) -> dict[str, Any]:
    """What the learn atom is shown of one attempt: outcomes, failed checks, changes."""
    record = item.record
    try:
        changes = json.loads((item.attempt_dir / "changes.json").read_text())["paths"]
    except (OSError, ValueError, KeyError, TypeError):
        changes = None
    return {
        "attemptId": record.attempt_id,
        "task": record.task,
        "variant": record.variant,
        "repetition": record.repetition,
        "outcome": record.outcome,
        "timedOut": known(record.timed_out),
        "error": known(record.error),
        "correct": known(record.correct),
        "hiddenAcceptance": known(record.hidden_acceptance),
        "requiredChecksPass": known(record.required_checks_pass),
        "scopeOK": known(record.scope_ok),
        "scopeViolations": known(record.scope_violations),
        "changedFiles": known(record.changed_files),
        "changes": changes,
        "failedChecks": [msgspec.to_builtins(f) for f in known(record.failed_check_output) or []],
        "regressionFailedTests": known(record.regression_failed_tests),
        "notes": known(record.notes),
        "finishedAt": known(record.finished_at),
    }
