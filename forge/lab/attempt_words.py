"""One attempt in words, for report.md and report.html alike: its files, why it ended, its checks.

Pure functions of an `AttemptRecord`. Paths are relative to `--out` (where both reports live).
"""

from __future__ import annotations

from msgspec import UNSET

from forge.attempt.layout import ATTEMPTS_DIR
from forge.attempt.record import AttemptRecord, FailedCommand, known


def folder(record: AttemptRecord) -> str:
    """The attempt's folder, relative to `--out`."""
    return f"{ATTEMPTS_DIR}/{record.task}/{record.variant}/rep-{record.repetition}"


def files(record: AttemptRecord) -> list[tuple[str, str]]:
    """(label, path) of the attempt's transcript and diff, those it has."""
    found: list[tuple[str, str]] = []
    if record.transcript is not UNSET:
        found.append(("transcript stdout", f"{folder(record)}/{record.transcript.stdout}"))
        found.append(("transcript stderr", f"{folder(record)}/{record.transcript.stderr}"))
    if record.changes_diff_sha256 is not UNSET:
        found.append(("changes.diff", f"{folder(record)}/changes.diff"))
    return found


def seconds(ms: int | None) -> str:
    return "?" if ms is None else f"{ms / 1000:.1f} s"


def timed_out(record: AttemptRecord) -> str | None:
    """Which step timed out and after how long, when one did."""
    if record.timed_out is True and record.invocations is not UNSET and record.invocations:
        last = record.invocations[-1]
        run = last.id.rsplit("/", 1)[-1]
        return f"the recipe's coding step ({run}) timed out after {seconds(last.elapsed_ms)}"
    for failure in record.failed_check_output or []:
        if failure.timed_out:
            return (
                f"{failure.phase} `{failure.id}` ({failure.view}) timed out after "
                f"{seconds(known(failure.elapsed_ms))}"
            )
    return None


def checks(record: AttemptRecord) -> str:
    """The required checks' state: passed, failed (the tails say which), not run (and why), or
    none (the plan and Formula have none)."""
    state = known(record.required_checks_pass)
    if state is True:
        return "passed"
    if state is False:
        return "failed"
    if record.invalid:
        return f"not run (invalid: {record.invalid})"
    if record.verified is False or record.verified is UNSET:
        return f"not run (the change was not verified: {known(record.outcome) or 'unknown'})"
    return "none required"


def ended(failure: FailedCommand) -> str:
    """How a failed command ended: `exit 1`, `timed out after 3.0 s`, or the bound that killed
    it."""
    if failure.limit is not UNSET:
        return f"resource-limit: {failure.limit}"
    if failure.timed_out:
        return f"timed out after {seconds(known(failure.elapsed_ms))}"
    return f"exit {failure.exit_code}"
