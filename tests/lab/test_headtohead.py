"""The head-to-head that opens report.md: its statistics against known values, and a cohort whose
variants differ on purpose rendered through the real report."""

from __future__ import annotations

import math
import re

import pytest

from forge.attempt.cohort import CohortSpec, TaskSpec
from forge.attempt.record import AttemptRecord
from forge.lab.headtohead import Interval, compare, newcombe, paired_bootstrap, wilson
from forge.lab.report import RunState, build_report, dumps_report, render_markdown
from tests.lab.test_report import SPEC, record

Z = 1.959963984540054


def wilson_by_formula(k: int, n: int) -> tuple[float, float]:
    """Wilson (1927): (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    p = k / n
    centre = p + Z**2 / (2 * n)
    half = Z * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2))
    return (centre - half) / (1 + Z**2 / n), (centre + half) / (1 + Z**2 / n)


@pytest.mark.parametrize(
    ("k", "published"),
    # The formula above rounded to four places, the values Wilson-score tables give for n=10.
    [(0, (0.0, 0.2775)), (5, (0.2366, 0.7634)), (10, (0.7225, 1.0))],
)
def test_wilson_matches_the_formula_and_the_published_table(
    k: int, published: tuple[float, float]
) -> None:
    interval = wilson(k, 10)
    assert interval is not None
    low, high = wilson_by_formula(k, 10)
    assert interval.low == pytest.approx(low, abs=1e-12)
    assert interval.high == pytest.approx(high, abs=1e-12)
    assert (round(interval.low, 4), round(interval.high, 4)) == published


def test_wilson_of_nothing_is_none_and_an_impossible_count_is_named() -> None:
    assert wilson(0, 0) is None
    with pytest.raises(ValueError, match="accepted 11 is not between 0 and n=10"):
        wilson(11, 10)


def test_newcombe_matches_his_worked_example() -> None:
    # Newcombe (1998), Statistics in Medicine 17:873, worked example (a): 56/70 - 48/80,
    # method 10 (hybrid score): 0.0524 to 0.3339.
    interval = newcombe(56, 70, 48, 80)
    assert interval is not None
    assert (round(interval.low, 4), round(interval.high, 4)) == (0.0524, 0.3339)
    # Example (b), 9/10 - 3/10: 0.1705 to 0.8090.
    small = newcombe(9, 10, 3, 10)
    assert small is not None
    assert (round(small.low, 4), round(small.high, 4)) == (0.1705, 0.8090)
    assert newcombe(1, 1, 0, 0) is None


def test_paired_bootstrap_is_fixed_by_its_seed_and_needs_two_tasks() -> None:
    differences = [1.0, 0.5, 0.0, 1.0, 0.5]
    one, two = paired_bootstrap(differences), paired_bootstrap(differences)
    assert one == two
    assert one is not None
    assert 0.0 <= one.low <= 0.6 <= one.high <= 1.0
    assert paired_bootstrap([0.0, 0.0, 0.0]) == Interval(0.0, 0.0)
    assert paired_bootstrap([1.0]) is None


def test_unstable_counts_and_grid_marks() -> None:
    cells = {
        "t1": {"a": ["accepted", "failed", "accepted"], "b": ["accepted", None, "invalid:x"]},
    }
    per = {"a": {"costUsd": None, "elapsedMs": None}, "b": {"costUsd": None, "elapsedMs": None}}
    head = compare(["a", "b"], ["t1"], cells, per)
    a, b = head["variants"]
    assert a["unstable"] == [{"task": "t1", "accepted": 2, "n": 3}]
    assert b["unstable"] == []
    assert (b["accepted"], b["n"]) == (1, 1)
    assert head["grid"] == {"t1": {"a": "\u2713\u2717\u2713", "b": "\u2713\u00b7\u2298"}}
    assert head["differences"][0]["evidence"] == "not enough evidence"


TASKS = tuple(TaskSpec(f"t{i}", f"t{i}/plan.json", str(i) * 64) for i in range(1, 7))
WIDE = CohortSpec(**{**SPEC.__dict__, "tasks": TASKS, "repetitions": 3})


def differing_cohort() -> list[AttemptRecord]:
    """b is accepted on every task; a only on t1, and on t2 in one repetition of three."""
    records = []
    for task in TASKS:
        for rep in (1, 2, 3):
            a_ok = task.name == "t1" or (task.name == "t2" and rep == 1)
            records.append(
                record(
                    task.name,
                    "a",
                    rep,
                    correct=a_ok,
                    hiddenAcceptance=a_ok,
                    costUsd=0.3,
                    costBasis="reported",
                    elapsedMs=2000,
                )
            )
            records.append(
                record(task.name, "b", rep, costUsd=0.6, costBasis="reported", elapsedMs=4000)
            )
    return records


def test_a_cohort_that_differs_on_purpose_opens_report_md_with_the_difference() -> None:
    records = differing_cohort()
    report = build_report(WIDE, RunState("complete"), records)
    markdown = render_markdown(WIDE, report, records)
    assert markdown.startswith("# Cohort evaluation\n\n## Head to head\n")
    head = markdown[: markdown.index("## Cohort\n")]

    rows = dict(re.findall(r"^\| (a|b) \| (\d+ of \d+) \|", head, re.MULTILINE))
    assert rows == {"a": "4 of 18", "b": "18 of 18"}
    assert "Wilson score" in head
    assert "Newcombe's hybrid score" in head
    assert "paired bootstrap over tasks" in head
    assert "seed 0" in head

    wa, wb = wilson(4, 18), wilson(18, 18)
    assert wa is not None
    assert wb is not None
    assert f"| a | 4 of 18 | {wa.low:.3f} to {wa.high:.3f} | $1.3500 | 9.0 s |" in head
    assert f"| b | 18 of 18 | {wb.low:.3f} to {wb.high:.3f} | $0.6000 | 4.0 s |" in head

    line = next(x for x in head.splitlines() if x.startswith("- b - a: "))
    found = re.match(
        r"- b - a: ([+-][\d.]+) \(95% Newcombe ([+-][\d.]+) to ([+-][\d.]+)\); "
        r"paired over 6 tasks: mean ([+-][\d.]+) \(95% bootstrap ([+-][\d.]+) to ([+-][\d.]+)\): "
        r"b accepted more often$",
        line,
    )
    assert found, line
    difference, low, high = (float(found.group(i)) for i in (1, 2, 3))
    expected = newcombe(18, 18, 4, 18)
    assert expected is not None
    assert difference == pytest.approx(14 / 18, abs=5e-4)
    assert (low, high) == (round(expected.low, 3), round(expected.high, 3))
    assert 0 < low < difference < high
    assert float(found.group(5)) > 0

    assert "- **unstable**: a on t2: 1 of 3 accepted" in head
    assert "| t2 | \u2713\u2717\u2717 | \u2713\u2713\u2713 |" in head
    assert report["headToHead"]["differences"][0]["evidence"] == "higher"
    assert '"headToHead"' in dumps_report(report)


def test_equal_variants_show_not_enough_evidence() -> None:
    records = [
        record(t.name, v, rep, correct=(rep == 1), hiddenAcceptance=(rep == 1))
        for t in TASKS
        for v in ("a", "b")
        for rep in (1, 2, 3)
    ]
    markdown = render_markdown(WIDE, build_report(WIDE, RunState("complete"), records), records)
    assert ": not enough evidence of a difference" in markdown
    assert "cost per accepted | time per accepted" in markdown
    assert "| a | 6 of 18 |" in markdown
    assert "| n/a | 3.0 s |" in markdown
    assert markdown.count("**unstable**") == 12
