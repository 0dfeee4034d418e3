"""Recurring failures: three classes, each a pure function of a finished attempt record, and the
streak rule that turns a run of them into one learn request.

The classes (docs/lab-replay.md):
- `process-timed-out`: the attempt's last coding invocation hit its timeout and verification did
  not pass afterwards (a record without invocations, from before coding ran, is not counted);
- `analysis-policy-violation`: forge has no analysis stage, so the policy is the plan's scope: the
  harness asked for a scope change, or its captured change left `allowedFiles`;
- `protected-regression-failed`: verification ran the protected view and one of its required
  steps (any step but the hidden acceptance) failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from forge.attempt.record import AttemptRecord, known
from forge.attempt.verify import ACCEPTANCE_ID

CLASSES = ("process-timed-out", "analysis-policy-violation", "protected-regression-failed")
RECENT_RECORDS = 128
"""The streak is read among the Lab's 128 most recently modified records, never further back."""


def exhibits(failure_class: str, record: AttemptRecord) -> bool:
    if failure_class == "process-timed-out":
        invocations = known(record.invocations) or []
        return bool(invocations) and invocations[-1].timed_out and known(record.correct) is not True
    if failure_class == "analysis-policy-violation":
        return record.outcome == "scope-change" or known(record.scope_ok) is False
    if failure_class == "protected-regression-failed":
        return any(
            failed.view == "protected" and failed.id != ACCEPTANCE_ID
            for failed in known(record.failed_check_output) or []
        )
    raise ValueError(f"unknown failure class {failure_class!r}")


@dataclass(frozen=True)
class Entry:
    """A finished record of the current Formula, and why learn would refuse it (None: it would
    accept it)."""

    record: AttemptRecord
    refusal: str | None


def streak(
    entries: Sequence[Entry], failure_class: str, threshold: int, used: set[str]
) -> list[str] | None:
    """The newest `threshold` attempt ids of the streak when it is long enough, oldest first.

    The streak is the newest run of records (by finish time, then attempt id) that exhibit the
    class and that learn would accept; any other record ends it, and so does a record an earlier
    request of this class already used as evidence (so the class re-fires only on new ones).
    """
    ordered = sorted(
        entries, key=lambda e: (known(e.record.finished_at) or "", e.record.attempt_id)
    )
    run: list[str] = []
    for entry in reversed(ordered):
        record = entry.record
        if entry.refusal is not None or record.attempt_id in used:
            break
        if not exhibits(failure_class, record):
            break
        run.append(record.attempt_id)
    if len(run) < threshold:
        return None
    return list(reversed(run[:threshold]))
