"""The head-to-head that opens report.md: which variant is accepted more often, by how much.

Pure functions of the report's task cells (the outcome class of each repetition, `None` where
none ran), so the definition of *accepted* is the report's own (`outcome_class`). Intervals are
95%: Wilson score per variant, Newcombe's hybrid score interval (his method 10) for a difference
of two proportions, and a paired bootstrap over tasks with a fixed seed, so the same records always
give the same bytes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

Z_95 = NormalDist().inv_cdf(0.975)
"""The standard normal quantile of a two-sided 95% interval (1.95996...)."""

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
"""Resamples and seed of the paired bootstrap: fixed, so a re-render gives the same bytes."""

ACCEPTED = "accepted"
MARKS = {"accepted": "\u2713", "not accepted": "\u2717", "not run": "\u00b7", "invalid": "\u2298"}
"""One grid mark per repetition: ✓ accepted, ✗ not accepted, · not run, ⊘ invalid (excluded)."""

Cells = Mapping[str, Mapping[str, Sequence[str | None]]]
"""task -> variant -> the outcome class of each repetition (`None`: not run)."""


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def spans_zero(self) -> bool:
        return self.low <= 0.0 <= self.high


def wilson(accepted: int, n: int, z: float = Z_95) -> Interval | None:
    """Wilson score interval for `accepted` of `n`; None when n is 0 (nothing to estimate)."""
    if n == 0:
        return None
    if not 0 <= accepted <= n:
        raise ValueError(f"accepted {accepted} is not between 0 and n={n}")
    p = accepted / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    denominator = 1 + z * z / n
    # At 0 of n and n of n the bound is exactly 0 or 1; the formula leaves rounding noise.
    low = 0.0 if accepted == 0 else (centre - spread) / denominator
    high = 1.0 if accepted == n else (centre + spread) / denominator
    return Interval(low, high)


def newcombe(
    accepted: int, n: int, base_accepted: int, base_n: int, z: float = Z_95
) -> Interval | None:
    """Newcombe's hybrid score interval for p - p_base, from the two Wilson intervals."""
    mine, base = wilson(accepted, n, z), wilson(base_accepted, base_n, z)
    if mine is None or base is None:
        return None
    p, q = accepted / n, base_accepted / base_n
    difference = p - q
    return Interval(
        difference - math.hypot(p - mine.low, base.high - q),
        difference + math.hypot(mine.high - p, q - base.low),
    )


def paired_bootstrap(
    differences: Sequence[float],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Interval | None:
    """95% percentile interval of the mean per-task difference, tasks resampled with replacement.

    None with fewer than two tasks: one task cannot say how much tasks vary."""
    if len(differences) < 2:
        return None
    rng = random.Random(seed)
    count = len(differences)
    means = sorted(
        sum(differences[rng.randrange(count)] for _ in range(count)) / count
        for _ in range(resamples)
    )
    return Interval(means[int(0.025 * resamples)], means[math.ceil(0.975 * resamples) - 1])


def _tally(cells: Sequence[str | None]) -> tuple[int, int]:
    """(accepted, valid) among one variant's repetitions: not run and invalid are left out."""
    valid = [c for c in cells if c is not None and not c.startswith("invalid")]
    return sum(1 for c in valid if c == ACCEPTED), len(valid)


def _mark(cell: str | None) -> str:
    if cell is None:
        return MARKS["not run"]
    if cell.startswith("invalid"):
        return MARKS["invalid"]
    return MARKS["accepted"] if cell == ACCEPTED else MARKS["not accepted"]


def compare(
    variants: Sequence[str],
    tasks: Sequence[str],
    cells: Cells,
    per_accepted: Mapping[str, Mapping[str, float | None]],
) -> dict[str, Any]:
    """The head-to-head as report.json holds it; every variant after the first against the first.

    `per_accepted` maps each variant to its `costUsd` and `elapsedMs` per accepted attempt."""
    tallies = {v: [_tally(cells[t][v]) for t in tasks] for v in variants}
    totals = {v: (sum(a for a, _ in tallies[v]), sum(m for _, m in tallies[v])) for v in variants}
    rows = [
        {
            "name": v,
            "accepted": totals[v][0],
            "n": totals[v][1],
            "wilson95": _pair(wilson(*totals[v])),
            "costPerAcceptedUsd": per_accepted[v]["costUsd"],
            "elapsedPerAcceptedMs": per_accepted[v]["elapsedMs"],
            "unstable": [
                {"task": t, "accepted": a, "n": m}
                for t, (a, m) in zip(tasks, tallies[v], strict=True)
                if 0 < a < m
            ],
        }
        for v in variants
    ]
    base = variants[0]
    differences = [_difference(v, base, totals, tallies) for v in variants[1:]]
    grid = {t: {v: "".join(_mark(c) for c in cells[t][v]) for v in variants} for t in tasks}
    return {"variants": rows, "differences": differences, "grid": grid}


def _difference(
    variant: str,
    base: str,
    totals: Mapping[str, tuple[int, int]],
    tallies: Mapping[str, Sequence[tuple[int, int]]],
) -> dict[str, Any]:
    """`variant` against `base`: Newcombe over all attempts, the bootstrap over tasks both ran."""
    (accepted, n), (base_accepted, base_n) = totals[variant], totals[base]
    paired = [
        a / m - b / k
        for (a, m), (b, k) in zip(tallies[variant], tallies[base], strict=True)
        if m and k
    ]
    difference = newcombe(accepted, n, base_accepted, base_n)
    bootstrap = paired_bootstrap(paired)
    return {
        "variant": variant,
        "against": base,
        "difference": _round(accepted / n - base_accepted / base_n) if n and base_n else None,
        "newcombe95": _pair(difference),
        "pairedTasks": len(paired),
        "pairedMeanDifference": _round(sum(paired) / len(paired)) if paired else None,
        "pairedBootstrap95": _pair(bootstrap),
        "evidence": _evidence(difference, bootstrap),
    }


def _evidence(difference: Interval | None, paired: Interval | None) -> str:
    """`higher` or `lower` only when neither interval spans zero and both agree."""
    if difference is None or paired is None:
        return "not enough evidence"
    if difference.spans_zero() or paired.spans_zero():
        return "not enough evidence"
    if difference.low > 0 and paired.low > 0:
        return "higher"
    if difference.high < 0 and paired.high < 0:
        return "lower"
    return "not enough evidence"


def _pair(interval: Interval | None) -> list[float] | None:
    return None if interval is None else [_round(interval.low), _round(interval.high)]


def _round(value: float) -> float:
    return round(value, 4)


def method_text(shape: str) -> str:
    """What is compared and how, for the reader; `shape` is `N tasks x R reps`."""
    return (
        "Compared: accepted attempts (outcome class `accepted`) of the valid attempts "
        f"({shape}); intervals are 95%: Wilson score per variant, Newcombe's hybrid score "
        "interval for the difference, and a paired bootstrap over tasks (mean of per-task "
        f"acceptance-rate differences, {BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED})."
    )


def legend() -> str:
    return (
        f"Per task ({MARKS['accepted']} accepted, {MARKS['not accepted']} not accepted, "
        f"{MARKS['not run']} not run, {MARKS['invalid']} invalid; one mark per repetition):"
    )


def difference_text(d: Mapping[str, Any]) -> str:
    """One difference in words: both intervals and the verdict."""
    return (
        f"{d['variant']} - {d['against']}: {_signed(d['difference'])} "
        f"(95% Newcombe {interval_text(d['newcombe95'])}); paired over {d['pairedTasks']} "
        f"tasks: mean {_signed(d['pairedMeanDifference'])} (95% bootstrap "
        f"{interval_text(d['pairedBootstrap95'])}): {_verdict(d)}"
    )


def render(head: Mapping[str, Any], shape: str) -> list[str]:
    """report.md's opening section, from `compare`'s result; `shape` is `N tasks x R reps`."""
    lines = [
        "## Head to head",
        "",
        method_text(shape),
        "",
        "| variant | accepted | 95% Wilson | cost per accepted | time per accepted |",
        "|---|---|---|---|---|",
    ]
    for row in head["variants"]:
        lines.append(
            f"| {row['name']} | {row['accepted']} of {row['n']} | "
            f"{interval_text(row['wilson95'], '')} | "
            f"{usd(row['costPerAcceptedUsd'])} | {seconds_text(row['elapsedPerAcceptedMs'])} |"
        )
    lines.append("")
    lines += [f"- {difference_text(d)}" for d in head["differences"]]
    for row in head["variants"]:
        for u in row["unstable"]:
            counts = f"{u['accepted']} of {u['n']} accepted"
            lines.append(f"- **unstable**: {row['name']} on {u['task']}: {counts}")
    names = [row["name"] for row in head["variants"]]
    lines += [
        "",
        legend(),
        "",
        "| task | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for task, marks in head["grid"].items():
        lines.append(f"| {task} | " + " | ".join(marks[n] for n in names) + " |")
    return [*lines, ""]


def _verdict(d: Mapping[str, Any]) -> str:
    if d["evidence"] == "not enough evidence":
        return "not enough evidence of a difference"
    return (
        f"{d['variant']} accepted more often"
        if d["evidence"] == "higher"
        else (f"{d['variant']} accepted less often")
    )


def interval_text(pair: Sequence[float] | None, sign: str = "+") -> str:
    if pair is None:
        return "n/a"
    return f"{_number(pair[0], sign)} to {_number(pair[1], sign)}"


def _signed(value: float | None) -> str:
    return "n/a" if value is None else _number(value, "+")


def _number(value: float, sign: str) -> str:
    return f"{value:{sign}.3f}"


def usd(value: float | None) -> str:
    """A dollar figure to four places, `n/a` when unknown (report.md's one money format)."""
    return "n/a" if value is None else f"${value:.4f}"


def seconds_text(ms: float | None) -> str:
    return "n/a" if ms is None else f"{ms / 1000:.1f} s"
