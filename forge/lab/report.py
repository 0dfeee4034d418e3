"""report.json and report.md as pure functions of the cohort, the run state and the records.

Records (`AttemptRecord`) are taken in coordinate order; nothing here reads a
file, a clock or the environment, so a resumed run that records nothing new renders the same bytes.
Every rate states its n. The head-to-head that opens report.md (`forge.lab.headtohead`) adds
95% intervals to the accepted counts and says "not enough evidence" when they span zero.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from msgspec import UNSET

from forge.attempt.cohort import CohortSpec
from forge.attempt.record import (
    AttemptRecord,
    RegressionFailure,
    cost_basis,
    known,
)
from forge.lab import attempt_words, headtohead, history
from forge.lab.headtohead import usd

REPORT_SCHEMA_VERSION = 1
FAILED_LINES_SHOWN = 20
"""report.md shows this many trailing lines of each stream of each failed command."""

TIMES = "\u00d7"
"""The multiplication sign in the n of every rate (`n=8 of 4 tasks x 2 reps`, with the sign)."""

_SUMMARY_OMITS = ("failedCheckOutput", "harnessOutput")
"""Tails stay in attempt.json: report.json is read by a resume and must stay small and clean."""


@dataclass(frozen=True)
class RunState:
    status: str
    """`running`, `complete`, `stopped` or `aborted`."""
    stop_reason: str | None = None
    abort_reason: str | None = None
    approval: dict[str, Any] = field(default_factory=dict)
    insecure_cluster: bool = False
    """Some invocation of the run used a Dask cluster without TLS (`--insecure-cluster`)."""
    history: tuple[dict[str, Any], ...] = ()
    """The run's events (`forge.lab.history`)."""


def outcome_class(record: AttemptRecord) -> str:
    """`accepted`, `failed`, `incomplete` or `invalid:<reason>` (acceptance table O-11)."""
    if record.invalid:
        return f"invalid:{record.invalid}"
    if record.correct:
        return "accepted"
    if record.outcome in ("completed", "no-change") and record.verified:
        return "failed"
    return "incomplete"


def build_report(
    spec: CohortSpec, state: RunState, records: Sequence[AttemptRecord]
) -> dict[str, Any]:
    variants = [_variant_figures(v.name, v.formula_sha256, spec, records) for v in spec.variants]
    primary = _primary(spec.primary_outcome, variants)
    task_rows = [_task_row(t.name, spec, records) for t in spec.tasks]
    report: dict[str, Any] = {
        "schemaVersion": REPORT_SCHEMA_VERSION,
        "status": state.status,
        "stopReason": state.stop_reason,
        "abortReason": state.abort_reason,
        "approval": state.approval,
        "cohort": {
            "hypothesis": spec.hypothesis,
            "primaryOutcome": spec.primary_outcome,
            "tasks": [t.name for t in spec.tasks],
            "repetitions": spec.repetitions,
            "variants": [v.name for v in spec.variants],
            "stop": {"maxAttempts": spec.stop.max_attempts, "maxCostUSD": spec.stop.max_cost_usd},
        },
        "seal": _seal(spec, records)
        | ({"insecureCluster": True} if state.insecure_cluster else {}),
        "primary": primary,
        "headToHead": headtohead.compare(
            [v.name for v in spec.variants],
            [t.name for t in spec.tasks],
            {row["name"]: row["cells"] for row in task_rows},
            {v["name"]: _per_accepted(v) for v in variants},
        ),
        "variants": variants,
        "tasks": task_rows,
        "history": history.summary(list(state.history)),
        "attempts": [_summary(r) for r in records],
        "notes": _notes(spec, state, records, variants, primary),
    }
    return report


def dumps_report(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def _valid(records: Iterable[AttemptRecord]) -> list[AttemptRecord]:
    return [r for r in records if not r.invalid]


def _variant_figures(
    name: str, formula_sha: str, spec: CohortSpec, records: Sequence[AttemptRecord]
) -> dict[str, Any]:
    """One variant's row of figures, each computed by one function below."""
    mine = [r for r in records if r.variant == name]
    valid = _valid(mine)
    hidden = _known_pass(valid, lambda r: known(r.hidden_acceptance))
    required = _known_pass(valid, lambda r: known(r.required_checks_pass))
    return {
        "name": name,
        "formulaSha256": formula_sha,
        "attempts": len(mine),
        "completions": _count(valid, lambda r: r.outcome == "completed"),
        "invalid": len(mine) - len(valid),
        "invalidReasons": _invalid_reasons(mine),
        "hiddenAcceptancePass": hidden[0],
        "hiddenAcceptanceN": hidden[1],
        "hiddenAcceptanceRate": _rate(*hidden),
        "requiredChecksPass": required[0],
        "requiredChecksN": required[1],
        "requiredChecksPassRate": _rate(*required),
        "correct": _count(valid, lambda r: r.correct is True),
        "correctExcludingBaseFlakes": _count(valid, _correct_excluding_base_flakes),
        "scopeViolations": _count(valid, lambda r: r.scope_ok is False),
        "scopeChanges": _count(valid, lambda r: r.outcome == "scope-change"),
        "amendments": 0,
        "timeouts": _count(valid, lambda r: r.timed_out is True),
        "elapsedMs": _spread([ms for r in valid if (ms := known(r.elapsed_ms)) is not None]),
        "harnessMs": _spread([ms for r in valid if (ms := known(r.harness_ms)) is not None]),
        "costUsdTotal": _cost_total(mine),
        "costBasis": cost_basis([known(r.cost_basis) for r in _costed(mine)]),
        "costCoverage": {"reported": len(_costed(mine)), "of": len(mine)},
        "costPerAcceptedUsd": _cost_per_accepted(valid),
        "costPerAcceptedCoverage": {"reported": len(_costed(valid)), "of": len(valid)},
        "elapsedPerAcceptedMs": _elapsed_per_accepted(valid),
        "supersededCostUsd": _money(sum(r.superseded_cost() for r in mine)),
        "effectiveModels": _effective_models(mine),
        "changesErrors": _count(mine, lambda r: bool(r.changes_error)),
        "cleanupErrors": _count(mine, lambda r: bool(r.cleanup_error)),
    }


def _count(records: Iterable[AttemptRecord], test: Callable[[AttemptRecord], bool]) -> int:
    return sum(1 for r in records if test(r))


def _known_pass(
    records: Sequence[AttemptRecord], verdict: Callable[[AttemptRecord], bool | None]
) -> tuple[int, int]:
    """(passed, known): of the records whose verdict is known, how many passed."""
    verdicts = [v for r in records if (v := verdict(r)) is not None]
    return sum(1 for v in verdicts if v is True), len(verdicts)


def _invalid_reasons(records: Sequence[AttemptRecord]) -> dict[str, int]:
    return dict(sorted(Counter(str(r.invalid) for r in records if r.invalid).items()))


def _costed(records: Sequence[AttemptRecord]) -> list[AttemptRecord]:
    """The records that reported a cost."""
    return [r for r in records if known(r.cost_usd) is not None]


def _cost_total(records: Sequence[AttemptRecord]) -> float | None:
    costed = _costed(records)
    return _money(sum(r.reported_cost() for r in costed)) if costed else None


def _cost_per_accepted(valid: Sequence[AttemptRecord]) -> float | None:
    """What the valid attempts that reported a cost cost, per correct one among them."""
    costed = _costed(valid)
    accepted = _count(costed, lambda r: bool(r.correct))
    return _money(sum(r.reported_cost() for r in costed) / accepted) if accepted else None


def _per_accepted(variant: dict[str, Any]) -> dict[str, float | None]:
    """A variant's cost and time per accepted attempt, as the head-to-head takes them."""
    return {"costUsd": variant["costPerAcceptedUsd"], "elapsedMs": variant["elapsedPerAcceptedMs"]}


def _elapsed_per_accepted(valid: Sequence[AttemptRecord]) -> float | None:
    """What the valid attempts that reported an elapsed time took, per correct one among them."""
    timed = [(ms, r) for r in valid if (ms := known(r.elapsed_ms)) is not None]
    accepted = _count((r for _, r in timed), lambda r: bool(r.correct))
    return round(sum(ms for ms, _ in timed) / accepted) if accepted else None


def _effective_models(records: Sequence[AttemptRecord]) -> dict[str, int]:
    """How many attempts each model served (an attempt counts once per model)."""
    models: Counter[str] = Counter()
    for record in records:
        models.update(set(record.models or ["unknown"]))
    return dict(sorted(models.items()))


def _seal(spec: CohortSpec, records: Sequence[AttemptRecord]) -> dict[str, Any]:
    """Which seal held: the layout always, the sandbox in how many attempts, network per variant."""
    seals = [(r.variant, r.seal) for r in records if r.seal is not UNSET]
    return {
        "sandbox": "bubblewrap",
        "sandboxed": sum(1 for _, seal in seals if seal.sandbox),
        "attempts": len(records),
        "unrecorded": len(records) - len(seals),
        "network": {
            v.name: sum(1 for name, seal in seals if name == v.name and seal.network)
            for v in spec.variants
        },
        "notSandboxed": sorted({seal.reason for _, seal in seals if seal.reason}),
    }


def _correct_excluding_base_flakes(record: AttemptRecord) -> bool:
    """A record that predates the field counts as its `correct`."""
    if record.correct_excluding_base_flakes is UNSET:
        return bool(record.correct)
    return record.correct_excluding_base_flakes


def _primary(outcome: str, variants: list[dict[str, Any]]) -> dict[str, Any]:
    key, n_key = {
        "hiddenAcceptancePassRate": ("hiddenAcceptanceRate", "hiddenAcceptanceN"),
        "requiredChecksPassRate": ("requiredChecksPassRate", "requiredChecksN"),
        "costPerAcceptedOutcome": ("costPerAcceptedUsd", "correct"),
    }[outcome]
    measurable = any(v[n_key] > 0 for v in variants)
    return {
        "outcome": outcome,
        "measurable": measurable,
        "byVariant": {v["name"]: v[key] for v in variants},
    }


def _task_row(task: str, spec: CohortSpec, records: Sequence[AttemptRecord]) -> dict[str, Any]:
    cells: dict[str, list[str | None]] = {}
    required: dict[str, dict[str, int]] = {}
    for variant in spec.variants:
        by_rep = {r.repetition: r for r in records if r.task == task and r.variant == variant.name}
        cells[variant.name] = [
            outcome_class(by_rep[n]) if n in by_rep else None
            for n in range(1, spec.repetitions + 1)
        ]
        ran = [r for r in _valid(by_rep.values()) if known(r.required_checks_pass) is not None]
        required[variant.name] = {
            "pass": sum(1 for r in ran if r.required_checks_pass is True),
            "n": len(ran),
        }
    return {"name": task, "cells": cells, "requiredChecks": required}


def _summary(record: AttemptRecord) -> dict[str, Any]:
    summary = {k: v for k, v in record.fields().items() if k not in _SUMMARY_OMITS}
    summary["class"] = outcome_class(record)
    return summary


def _notes(
    spec: CohortSpec,
    state: RunState,
    records: Sequence[AttemptRecord],
    variants: list[dict[str, Any]],
    primary: dict[str, Any],
) -> list[str]:
    notes: list[str] = []
    seal = _seal(spec, records)
    for reason in seal["notSandboxed"]:
        notes.append(f"recipe not sandboxed: {reason}; the layout seal alone held.")
    unsealed = [name for name, count in seal["network"].items() if count]
    if unsealed:
        notes.append(
            f"sealed: no (network) for variant(s) {', '.join(unsealed)}: their recipes could "
            "reach the internet, where a public fix of a task (a merged pull request, a later "
            "release) may be found."
        )
    if state.stop_reason:
        notes.append(f"Stopped: {state.stop_reason}.")
    if state.abort_reason:
        notes.append(f"Aborted: {state.abort_reason}.")
    if state.insecure_cluster:
        notes.append(
            "Insecure cluster: attempts ran on a Dask cluster without TLS (--insecure-cluster); "
            "anyone who could reach its scheduler could run code on its workers, outside the "
            "sandbox, and change any attempt or this report."
        )
    invalid = [r for r in records if r.invalid]
    if invalid:
        reasons = Counter(str(r.invalid) for r in invalid)
        named = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
        notes.append(
            f"{len(invalid)} invalid attempt(s) ({named}) excluded from completions, passes, "
            "failures, timeouts, scope counts, required checks, medians and cost per accepted "
            "outcome; they stay in attempt counts and reported cost."
        )
    counts = [v["attempts"] for v in variants]
    if state.status != "complete" and counts[0] != counts[1]:
        notes.append(
            f"Imbalance: {variants[0]['name']} has {counts[0]} attempt(s) and "
            f"{variants[1]['name']} {counts[1]}; "
            "rates over different n are not directly comparable."
        )
    if any(r.parallel for r in records):
        notes.append(
            "Elapsed and harness durations include contention from concurrent attempts "
            "(some attempts ran with --parallel above 1)."
        )
    if not primary["measurable"]:
        notes.append(
            f"The primary outcome ({spec.primary_outcome}) is not measurable: "
            "n=0 for every variant."
        )
    missing_hidden = sum(1 for r in _valid(records) if r.hidden_acceptance is UNSET)
    if missing_hidden:
        notes.append(
            f"{missing_hidden} record(s) predate the hiddenAcceptance field and are left out of "
            "the hidden-acceptance rate."
        )
    changes_errors = sum(v["changesErrors"] for v in variants)
    if changes_errors:
        notes.append(f"{changes_errors} attempt(s) could not capture their changes (changesError).")
    cleanup_errors = sum(v["cleanupErrors"] for v in variants)
    if cleanup_errors:
        notes.append(
            f"{cleanup_errors} attempt(s) could not remove their workspace (cleanupError)."
        )
    unknown_models = sum(1 for r in records if "unknown" in (r.models or ["unknown"]))
    if unknown_models:
        notes.append(f"{unknown_models} attempt(s) reported no served model (counted as unknown).")
    return notes


def _rate(passed: int, n: int) -> float | None:
    return round(passed / n, 4) if n else None


def _money(value: float) -> float:
    return round(value, 6)


def _spread(values: list[int]) -> dict[str, int | None]:
    """Median (statistics.median) and p90 (nearest rank) in integer ms over valid attempts."""
    if not values:
        return {"median": None, "p90": None, "n": 0}
    ordered = sorted(values)
    p90 = ordered[math.ceil(0.9 * len(ordered)) - 1]
    return {"median": round(statistics.median(ordered)), "p90": p90, "n": len(ordered)}


def render_markdown(
    spec: CohortSpec, report: dict[str, Any], records: Sequence[AttemptRecord]
) -> str:
    """report.md: the head-to-head, the same figures as report.json, then `## Attempts` with
    failed-command tails."""
    shape = f"{len(spec.tasks)} tasks {TIMES} {spec.repetitions} reps"
    lines = [
        "# Cohort evaluation",
        "",
        *headtohead.render(report["headToHead"], shape),
        "## Cohort",
        "",
        f"- Hypothesis: {spec.hypothesis}",
        f"- Primary outcome: {spec.primary_outcome}"
        + ("" if report["primary"]["measurable"] else " (not measurable)"),
        f"- Status: {report['status']}",
        f"- Digest: {report['approval'].get('digest', 'n/a')}",
        f"- Seal: {_seal_text(report['seal'])}",
        "",
        "## Variants",
        "",
    ]
    for variant in report["variants"]:
        lines += _variant_lines(variant, shape)
    names = [v.name for v in spec.variants]
    lines += ["## Tasks", "", "| task | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for row in report["tasks"]:
        cells = []
        for name in names:
            outcomes = ", ".join(c or "—" for c in row["cells"][name])
            req = row["requiredChecks"][name]
            cells.append(f"{outcomes} (required checks {req['pass']}/{req['n']}, n={req['n']})")
        lines.append(f"| {row['name']} | " + " | ".join(cells) + " |")
    lines += ["", "## Notes", ""]
    lines += [f"- {note}" for note in report["notes"]] or ["- none"]
    lines += ["", "## History", ""]
    lines += history.lines(report["history"])
    lines += ["", "## Attempts", ""]
    for record in records:
        lines += _attempt_lines(record)
    return "\n".join(lines).rstrip("\n") + "\n"


def _seal_text(seal: dict[str, Any]) -> str:
    network = ", ".join(f"{name} {n}" for name, n in seal["network"].items())
    text = (
        "workspaces in private directories outside --out; recipe and checks sandboxed "
        f"({seal['sandbox']}) in {seal['sandboxed']} of {seal['attempts']} attempts; "
        f"attempts with network: {network}"
    )
    if seal["unrecorded"]:
        text += f"; {seal['unrecorded']} record(s) predate the seal field"
    if seal.get("insecureCluster"):
        text += "; on a Dask cluster WITHOUT TLS (--insecure-cluster)"
    return text


def _variant_lines(v: dict[str, Any], shape: str) -> list[str]:
    valid = v["attempts"] - v["invalid"]
    cost = v["costCoverage"]
    per_accepted = v["costPerAcceptedCoverage"]
    models = ", ".join(f"{m} {TIMES}{n}" for m, n in v["effectiveModels"].items())
    return [
        f"### {v['name']}",
        "",
        f"- attempts: {v['attempts']} (invalid {v['invalid']}{_reasons(v['invalidReasons'])})",
        f"- completions: {_of(v['completions'], valid, shape)}",
        f"- correct: {_of(v['correct'], valid, shape)}; hidden-acceptance passed in "
        f"{v['hiddenAcceptancePass']} of the {v['hiddenAcceptanceN']} "
        f"{'attempt' if v['hiddenAcceptanceN'] == 1 else 'attempts'} where it ran",
        "- hidden-acceptance pass rate: "
        + _of(v["hiddenAcceptancePass"], v["hiddenAcceptanceN"], shape),
        f"- required-checks pass rate: {_of(v['requiredChecksPass'], v['requiredChecksN'], shape)}",
        f"- correctExcludingBaseFlakes: {v['correctExcludingBaseFlakes']}",
        f"- scope violations {v['scopeViolations']}, scope changes {v['scopeChanges']}, "
        f"amendments {v['amendments']}, timeouts {v['timeouts']}",
        f"- elapsed ms: {_spread_text(v['elapsedMs'])}; harness ms: {_spread_text(v['harnessMs'])}",
        f"- reported cost: {usd(v['costUsdTotal'])} (basis {v['costBasis'] or 'n/a'}, "
        f"{cost['reported']} of {cost['of']} attempts reported)",
        f"- cost per accepted outcome: {usd(v['costPerAcceptedUsd'])} "
        f"({per_accepted['reported']} of {per_accepted['of']} valid attempts reported cost)",
        f"- effective models: {models or 'none'}",
        "",
    ]


def _attempt_lines(record: AttemptRecord) -> list[str]:
    models = ", ".join(record.models or ["unknown"])
    lines = [
        f"- {record.task} {record.variant} rep-{record.repetition}: "
        f"{outcome_class(record)}; models {models}; cost {usd(known(record.cost_usd))}; "
        f"elapsed {known(record.elapsed_ms)} ms{_limit(record)}{_unsealed(record)}"
    ]
    if links := attempt_words.files(record):
        lines.append("  - files: " + ", ".join(f"[{label}]({path})" for label, path in links))
    if (timeout := attempt_words.timed_out(record)) is not None:
        lines.append(f"  - {timeout}")
    lines.append(f"  - required checks: {attempt_words.checks(record)}")
    if record.egress is not UNSET:
        for entry in record.egress.decisions:
            if entry.decision != "admitted":
                lines.append(
                    f"  - network: {entry.decision} {entry.destination} ({entry.reason}), "
                    f"{entry.count} time(s)"
                )
    for failure in record.failed_check_output or []:
        lines.append(
            f"  - failed {failure.phase} `{failure.id}` ({failure.view} view, "
            f"{attempt_words.ended(failure)}):"
        )
        lines += _streams(failure.stdout_tail, failure.stderr_tail)
    if record.harness_output:
        lines.append(f"  - harness output ({known(record.error)}):")
        lines += _streams(record.harness_output.stdout_tail, record.harness_output.stderr_tail)
    if record.regression_failed_tests:
        suffix = " (output truncated)" if record.regression_failed_tests_truncated else ""
        lines.append(f"  - regression failures{suffix}:")
        by_test = {f"{f.package}::{f.test}": f for f in record.regression_failures or []}
        for test in record.regression_failed_tests:
            lines.append(f"    - {test}{_base_mark(by_test.get(test))}")
    return lines


def _streams(stdout: str, stderr: str) -> list[str]:
    """Both streams' last lines, each in a fence longer than any backtick run it holds; an
    empty stream says so."""
    lines: list[str] = []
    for name, text in (("stdout", stdout), ("stderr", stderr)):
        shown = last_lines(text, FAILED_LINES_SHOWN)
        if not shown:
            lines.append(f"    - {name}: (empty)")
            continue
        fence = "`" * max(3, _longest_backtick_run(text) + 1)
        lines += [f"    - {name}:", "", f"      {fence}"]
        lines += ["      " + line for line in shown]
        lines += [f"      {fence}", ""]
    return lines


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest


def _limit(record: AttemptRecord) -> str:
    """`; resource-limit: pids` (the limit named) for an attempt killed at one of its bounds."""
    outcome = known(record.outcome) or ""
    return f"; {outcome}" if outcome.startswith("resource-limit: ") else ""


def _unsealed(record: AttemptRecord) -> str:
    """`; sealed: no (network)` for an attempt whose recipe could reach the network, and
    `; sealed: yes (egress: host:port, ...)` for one that could reach only its allow-list."""
    if record.seal is UNSET:
        return ""
    if record.seal.network:
        return "; sealed: no (network)"
    if record.seal.egress:
        return f"; sealed: yes (egress: {', '.join(record.seal.egress)})"
    return ""


def _base_mark(failure: RegressionFailure | None) -> str:
    if failure is None or failure.unclassified:
        return " [unclassified]"
    if failure.flaky_at_base:
        return f" [flaky at base ({failure.base_fails}/3 failed)]"
    if failure.broken_at_base:
        return " [broken at base]"
    return " [passed at base]"


def last_lines(text: str, count: int) -> list[str]:
    """The last `count` lines of `text`; a leading `…` marks a first line cut from a longer one."""
    lines = text.splitlines()
    if len(lines) > count:
        lines = lines[-count:]
        lines[0] = "…" + lines[0]
    return lines


def _of(passed: int, n: int, shape: str) -> str:
    if n == 0:
        return f"n/a (n=0 of {shape})"
    return f"{passed}/{n} = {passed / n:.1%} (n={n} of {shape})"


def _reasons(reasons: dict[str, int]) -> str:
    return (": " + ", ".join(f"{r} {n}" for r, n in reasons.items())) if reasons else ""


def _spread_text(spread: dict[str, int | None]) -> str:
    if not spread["n"]:
        return "n/a (n=0)"
    return f"median {spread['median']}, p90 {spread['p90']} (n={spread['n']})"
