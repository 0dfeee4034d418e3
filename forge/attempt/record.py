"""The attempt record (`attempt.json`): one schema for the attempt that writes it and its readers.

`run_attempt` fills an `AttemptRecord` as the attempt goes; the scheduler adds what only it knows
(`supersededCostUsd`) and writes it; the scheduler, the report and the progress line read it back.
Field names are the file's camelCase keys, in the file's order. A field the attempt never reached
(no coding after a failed setup, no capture numbers after a failed capture) is `UNSET` and absent
from the file, never null; a record written by an older forge may lack others, so readers take
absent as null through `known`. Numbers are written by `json.dumps`, as they always were.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from forge.attempt.egress.log import EgressRecord

SCHEMA_VERSION = 1

T = TypeVar("T")


def known(value: T | UnsetType) -> T | None:
    """A field's value, with a field the record does not carry read as null."""
    return None if value is UNSET else value


class Usage(msgspec.Struct, rename="camel", kw_only=True):
    """What one harness run reported about its cost and model (null when it did not say)."""

    cost_usd: float | None
    model: str | None
    cost_basis: str | None


class Invocation(msgspec.Struct, rename="camel", kw_only=True):
    """One run of the coding harness."""

    id: str
    """`<attemptId>/coding-<n>`."""
    outcome: str
    terminal_reason: str | None
    error: str | None
    exit_code: int | None
    timed_out: bool
    classification: str | None
    """`transient-provider-error` for a run the attempt resumed (or gave up on)."""
    resumed: str | None
    elapsed_ms: int
    usage: Usage
    message: str | UnsetType | None = UNSET
    """The provider's error text, for a transient one."""


class Tails(msgspec.Struct, rename="camel", kw_only=True):
    """The redacted ends of a command's output."""

    stdout_tail: str
    stderr_tail: str


class TranscriptFiles(msgspec.Struct, rename="camel", kw_only=True):
    """Where the recipe step's transcript is, relative to the attempt's folder, and how many
    bytes of each stream its cut left out (`forge.attempt.transcript`)."""

    stdout: str
    stderr: str
    stdout_not_kept: int
    stderr_not_kept: int


class FailedCommand(msgspec.Struct, rename="camel", kw_only=True):
    """A setup command or check that failed, where it ran, and the ends of its output."""

    phase: str
    """`setup` or `check`."""
    view: str
    """`workspace`, or the verification view: `candidate`, `protected`, `independent`."""
    id: str
    exit_code: int | None
    timed_out: bool
    stdout_tail: str
    stderr_tail: str
    limit: str | UnsetType = UNSET
    """The bound that killed it (`pids`, `memory`, `disk`): its exit code is then null."""
    elapsed_ms: int | UnsetType = UNSET
    """How long it ran (how long before its timeout killed it)."""


class RegressionFailure(msgspec.Struct, rename="camel", kw_only=True):
    """A pytest test that failed in a view, and what re-running it at base showed."""

    package: str
    test: str
    flaky_at_base: bool
    broken_at_base: bool
    base_fails: int
    base_passes: int
    unclassified: bool
    """Not re-run, or its base runs were neither all passes, all failures nor mixed."""


class Seal(msgspec.Struct, rename="camel", kw_only=True):
    """What kept the answer out of the recipe's reach in this attempt."""

    sandbox: str | None
    """`bubblewrap` when the recipe and checks ran in it; null for the layout seal alone."""
    reason: str | None
    """Why the recipe was not sandboxed (null when it was)."""
    network: bool
    """Whether the recipe could reach the network (always true without the sandbox)."""
    egress: list[str] | UnsetType = UNSET
    """The only destinations the sandboxed recipe could reach (its atom's allow-list), when it
    has one; it stays sealed."""


class AttemptRecord(msgspec.Struct, rename="camel", kw_only=True):
    """One attempt's `attempt.json`, fields in file order."""

    schema_version: int
    task: str
    variant: str
    repetition: int
    attempt_id: str
    formula_sha256: str
    plan_sha256: str
    pinned_model: str
    started_at: str
    parallel: int | UnsetType = UNSET
    """Only when the run had `--parallel` above 1."""
    seal: Seal | UnsetType = UNSET
    egress: EgressRecord | UnsetType = UNSET
    """Every destination a networked attempt's steps tried, and the proxy's decision."""
    outcome: str | UnsetType = UNSET
    timed_out: bool | UnsetType = UNSET
    invocations: list[Invocation] | UnsetType = UNSET
    harness_ms: int | UnsetType = UNSET
    cost_usd: float | UnsetType | None = UNSET
    cost_basis: str | UnsetType | None = UNSET
    models: list[str] | UnsetType = UNSET
    resumed: str | UnsetType | None = UNSET
    harness_output: Tails | UnsetType = UNSET
    """The harness's output, when it was not one valid report."""
    transcript: TranscriptFiles | UnsetType = UNSET
    """The recipe step's streams, kept whole up to a bound, when the harness ran."""
    served_model: str | UnsetType = UNSET
    transient_exhausted: list[str] | UnsetType = UNSET
    changed_files: list[str] | UnsetType = UNSET
    changes_diff_sha256: str | UnsetType = UNSET
    changes_diff_bytes: int | UnsetType = UNSET
    changes_diff_truncated: bool | UnsetType = UNSET
    changes_error: str | UnsetType | None = UNSET
    scope_ok: bool | UnsetType = msgspec.field(default=UNSET, name="scopeOK")
    scope_violations: list[str] | UnsetType = UNSET
    verified: bool | UnsetType = UNSET
    hidden_acceptance: bool | UnsetType | None = UNSET
    required_checks_pass: bool | UnsetType | None = UNSET
    correct: bool | UnsetType = UNSET
    correct_excluding_base_flakes: bool | UnsetType = UNSET
    regression_failed_tests: list[str] | UnsetType = UNSET
    regression_failed_tests_truncated: bool | UnsetType = UNSET
    regression_failures: list[RegressionFailure] | UnsetType = UNSET
    failed_check_output: list[FailedCommand] | UnsetType = UNSET
    peak_rss_bytes: int | UnsetType = UNSET
    cpu_seconds: float | UnsetType = UNSET
    stray_processes_killed: int | UnsetType = UNSET
    notes: list[str] | UnsetType = UNSET
    error: str | UnsetType | None = UNSET
    invalid: str | UnsetType | None = UNSET
    """`model-mismatch` or `provider-unavailable`: the attempt does not count (null when valid)."""
    cleanup_error: str | UnsetType = UNSET
    finished_at: str | UnsetType = UNSET
    elapsed_ms: int | UnsetType = UNSET
    superseded_cost_usd: float | UnsetType = UNSET
    """Added by the scheduler: what the provider-unavailable records this one replaced cost."""

    def reported_cost(self) -> float:
        """`costUsd`, 0 when the attempt reported none."""
        return known(self.cost_usd) or 0.0

    def superseded_cost(self) -> float:
        """`supersededCostUsd`, 0 when it replaced no record."""
        return known(self.superseded_cost_usd) or 0.0

    def fields(self) -> dict[str, object]:
        """The record as the file's JSON object (camelCase keys, absent fields left out)."""
        document: dict[str, object] = msgspec.to_builtins(self)
        return document


def dumps_record(record: AttemptRecord) -> bytes:
    """`attempt.json`'s bytes: two-space indent, UTF-8 kept, Python's float formatting."""
    return (json.dumps(record.fields(), indent=2, ensure_ascii=False) + "\n").encode()


def read_record(document: object) -> AttemptRecord | None:
    """A finished record from a decoded `attempt.json`; None when the attempt never finished.

    Finished means an object of this schema version with an outcome; one that is finished but
    does not fit the schema raises `msgspec.ValidationError`, naming the field.
    """
    if not isinstance(document, dict) or document.get("schemaVersion") != SCHEMA_VERSION:
        return None
    if "outcome" not in document:
        return None
    return msgspec.convert(document, AttemptRecord)


def cost_basis(bases: Iterable[str | None]) -> str | None:
    """One label for the bases behind a total: `reported`, `list-price-estimate`, `mixed (...)`."""
    counts = Counter(b or "unspecified" for b in bases)
    if not counts:
        return None
    if len(counts) == 1:
        return next(iter(counts))
    return "mixed (" + ", ".join(f"{n} {basis}" for basis, n in sorted(counts.items())) + ")"
