"""report.json and report.md as pure functions of records (rows M2-M9, I2, I3, R7, P5)."""

from __future__ import annotations

import json
import re
from typing import Any

from msgspec import UNSET

from forge.attempt.cohort import CohortSpec, Stop, TaskSpec, VariantSpec
from forge.attempt.record import AttemptRecord, FailedCommand, dumps_record, read_record
from forge.attempt.regression import classify
from forge.lab.report import (
    TIMES,
    RunState,
    build_report,
    dumps_report,
    last_lines,
    render_markdown,
)

SPEC = CohortSpec(
    hypothesis="b is better",
    primary_outcome="hiddenAcceptancePassRate",
    variants=(VariantSpec("a", "a.yaml", "a" * 64), VariantSpec("b", "b.yaml", "b" * 64)),
    tasks=(TaskSpec("t1", "t1/plan.json", "1" * 64), TaskSpec("t2", "t2/plan.json", "2" * 64)),
    repetitions=2,
    stop=Stop(),
)


def record(task: str, variant: str, rep: int, **fields: Any) -> AttemptRecord:
    """A record as a resume reads it from `attempt.json`, from camelCase fields."""
    base: dict[str, Any] = {
        "schemaVersion": 1,
        "task": task,
        "variant": variant,
        "repetition": rep,
        "attemptId": f"{task}.{variant}.rep-{rep}.0123456789ab",
        "formulaSha256": variant * 64,
        "planSha256": "0" * 64,
        "pinnedModel": "m1",
        "startedAt": "2026-01-01T00:00:00Z",
        "outcome": "completed",
        "verified": True,
        "hiddenAcceptance": True,
        "requiredChecksPass": True,
        "correct": True,
        "correctExcludingBaseFlakes": True,
        "scopeOK": True,
        "timedOut": False,
        "elapsedMs": 1000,
        "harnessMs": 500,
        "costUsd": None,
        "costBasis": None,
        "models": ["m1"],
    }
    base.update(fields)
    typed = read_record(base)
    assert typed is not None
    return typed


def full_run() -> list[AttemptRecord]:
    return [
        record("t1", "a", 1, costUsd=0.5, costBasis="reported", elapsedMs=100),
        record(
            "t1",
            "b",
            1,
            correct=False,
            hiddenAcceptance=False,
            costUsd=0.25,
            costBasis="reported",
            elapsedMs=200,
        ),
        record("t1", "a", 2, costUsd=0.5, costBasis="list-price-estimate", elapsedMs=300),
        record(
            "t1",
            "b",
            2,
            invalid="model-mismatch",
            correct=False,
            hiddenAcceptance=None,
            requiredChecksPass=None,
            models=["x"],
            costUsd=1.0,
            costBasis="reported",
        ),
        record("t2", "a", 1, requiredChecksPass=None, elapsedMs=400),
        record(
            "t2",
            "b",
            1,
            outcome="timed-out",
            timedOut=True,
            verified=False,
            correct=False,
            hiddenAcceptance=None,
            requiredChecksPass=False,
        ),
        record("t2", "a", 2, scopeOK=False, correct=False, elapsedMs=500),
        record(
            "t2",
            "b",
            2,
            outcome="scope-change",
            verified=False,
            correct=False,
            hiddenAcceptance=None,
            models=[],
        ),
    ]


def variant(report: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(v for v in report["variants"] if v["name"] == name)
    return found


def test_per_variant_figures_recomputed_by_hand() -> None:
    report = build_report(SPEC, RunState("complete"), full_run())
    a, b = variant(report, "a"), variant(report, "b")
    assert a["attempts"] == 4
    assert a["completions"] == 4
    assert a["correct"] == 3
    assert a["hiddenAcceptancePass"] == 4
    assert (a["hiddenAcceptanceN"], a["hiddenAcceptanceRate"]) == (4, 1.0)
    assert (a["requiredChecksPass"], a["requiredChecksN"]) == (3, 3)
    assert a["scopeViolations"] == 1
    assert a["elapsedMs"] == {"median": 350, "p90": 500, "n": 4}
    assert a["costUsdTotal"] == 1.0
    assert a["costBasis"] == "mixed (1 list-price-estimate, 1 reported)"
    assert a["costCoverage"] == {"reported": 2, "of": 4}
    # Cost per accepted: 1.0 reported by valid costed attempts / 2 accepted among them.
    assert a["costPerAcceptedUsd"] == 0.5
    assert a["costPerAcceptedCoverage"] == {"reported": 2, "of": 4}

    # b: the invalid attempt stays in attempts and cost, and nowhere else.
    assert b["attempts"] == 4
    assert b["invalid"] == 1
    assert b["invalidReasons"] == {"model-mismatch": 1}
    assert b["completions"] == 1
    assert (b["hiddenAcceptancePass"], b["hiddenAcceptanceN"]) == (0, 1)
    assert b["timeouts"] == 1
    assert b["scopeChanges"] == 1
    assert b["costUsdTotal"] == 1.25
    assert b["costCoverage"] == {"reported": 2, "of": 4}
    assert b["costPerAcceptedUsd"] is None
    assert b["elapsedMs"]["n"] == 3
    assert b["effectiveModels"] == {"m1": 2, "unknown": 1, "x": 1}
    assert report["primary"] == {
        "outcome": "hiddenAcceptancePassRate",
        "measurable": True,
        "byVariant": {"a": 1.0, "b": 0.0},
    }


def test_task_cells_and_required_checks_state_their_n() -> None:
    report = build_report(SPEC, RunState("complete"), full_run())
    t2 = report["tasks"][1]
    assert t2["cells"] == {"a": ["accepted", "failed"], "b": ["incomplete", "incomplete"]}
    assert t2["requiredChecks"]["a"] == {"pass": 1, "n": 1}


def test_notes_invalid_once_and_imbalance_only_when_stopped() -> None:
    complete = build_report(SPEC, RunState("complete"), full_run())
    assert sum("invalid attempt" in n for n in complete["notes"]) == 1
    assert not any("Imbalance" in n for n in complete["notes"])
    stopped = build_report(
        SPEC, RunState("stopped", stop_reason="maxAttempts 3 reached"), full_run()[:3]
    )
    assert any(n.startswith("Imbalance: a has 2 attempt(s) and b 1") for n in stopped["notes"])
    assert "Stopped: maxAttempts 3 reached." in stopped["notes"]


def test_contention_note_when_any_attempt_ran_in_parallel() -> None:
    records = full_run()
    assert not any(
        "contention" in n for n in build_report(SPEC, RunState("complete"), records)["notes"]
    )
    records[3].parallel = 2
    assert any(
        "contention" in n for n in build_report(SPEC, RunState("complete"), records)["notes"]
    )


def test_required_checks_primary_not_measurable_when_all_na() -> None:
    spec = CohortSpec(**{**SPEC.__dict__, "primary_outcome": "requiredChecksPassRate"})
    records = [record("t1", v, r, requiredChecksPass=None) for r in (1, 2) for v in ("a", "b")]
    report = build_report(spec, RunState("complete"), records)
    assert report["primary"]["measurable"] is False
    assert variant(report, "a")["requiredChecksPassRate"] is None
    assert any("not measurable" in n for n in report["notes"])


def test_record_without_hidden_acceptance_key_is_excluded_and_noted() -> None:
    records = full_run()
    records[0].hidden_acceptance = UNSET
    report = build_report(SPEC, RunState("complete"), records)
    assert variant(report, "a")["hiddenAcceptanceN"] == 3
    assert any("predate the hiddenAcceptance field" in n for n in report["notes"])


def test_report_json_has_no_tails_and_md_has_them() -> None:
    records = full_run()
    records[1].failed_check_output = [
        FailedCommand(
            phase="check",
            view="candidate",
            id="pytest-0",
            exit_code=1,
            timed_out=False,
            stdout_tail="\n".join(f"line {i}" for i in range(30)),
            stderr_tail="",
        )
    ]
    report = build_report(SPEC, RunState("complete"), records)
    assert "failedCheckOutput" not in dumps_report(report)
    markdown = render_markdown(SPEC, report, records)
    assert "…line 10" in markdown
    assert "line 9\n" not in markdown
    assert "- t1 b rep-1: failed; models m1; cost $0.2500; elapsed 200 ms" in markdown


def test_every_rate_in_markdown_states_its_n_and_no_significance_claims() -> None:
    report = build_report(SPEC, RunState("complete"), full_run())
    markdown = render_markdown(SPEC, report, full_run())
    rates = re.findall(r"\d+/\d+ = [\d.]+%[^\n]*", markdown)
    assert rates
    assert all("(n=" in line and f"2 tasks {TIMES} 2 reps" in line for line in rates)
    assert "hidden-acceptance passed in 4 of the 4 attempts where it ran" in markdown
    assert "significan" not in markdown.lower()
    assert "p-value" not in markdown.lower()


def test_report_is_independent_of_input_identity() -> None:
    one = dumps_report(build_report(SPEC, RunState("complete"), full_run()))
    reread = [read_record(json.loads(dumps_record(r))) for r in full_run()]
    two = dumps_report(build_report(SPEC, RunState("complete"), [r for r in reread if r]))
    assert one == two


def test_regression_marks_in_attempts_section() -> None:
    records = full_run()
    records[0].regression_failed_tests = [
        "tests/test_broken.py::test_always",
        "tests/test_flaky.py::test_flip",
    ]
    records[0].regression_failures = [
        classify("tests/test_broken.py", "test_always", ["fail"] * 3),
        classify("tests/test_flaky.py", "test_flip", ["fail", "pass", "fail"]),
    ]
    markdown = render_markdown(SPEC, build_report(SPEC, RunState("complete"), records), records)
    assert "tests/test_flaky.py::test_flip [flaky at base (2/3 failed)]" in markdown
    assert "tests/test_broken.py::test_always [broken at base]" in markdown


def test_last_lines_marks_a_cut() -> None:
    assert last_lines("a\nb\nc", 2) == ["…b", "c"]
    assert last_lines("a\nb", 2) == ["a", "b"]
