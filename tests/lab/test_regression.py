"""Regression failures re-run at the base commit: flaky, broken, correctExcludingBaseFlakes
(rows V1, V5, V8, V10, V11, M8)."""

from __future__ import annotations

import json

from .kit import Kit


def test_flaky_at_base_is_classified_and_excused_but_broken_is_not(kit: Kit) -> None:
    # test_flip's runs, in order: candidate view, independent view, then 3 base re-runs.
    kit.schedule("FFFPF")
    kit.cohort(
        a=kit.formula("a"),
        b=kit.formula("b", knobs={"FAKE_OUTCOME": "failed"}),
        tasks={
            "t-flaky": kit.plan("t-flaky", checks=["tests/test_calc.py", "tests/test_flaky.py"]),
            "t-both": kit.plan("t-both", checks=["tests/test_flaky.py", "tests/test_broken.py"]),
        },
    )
    result = kit.approve()
    assert result.returncode == 2, result.stderr

    flaky = kit.record("t-flaky", "a")
    assert (flaky["correct"], flaky["hiddenAcceptance"], flaky["requiredChecksPass"]) == (
        False,
        True,
        False,
    )
    assert flaky["regressionFailedTests"] == ["tests/test_flaky.py::test_flip"]
    assert flaky["regressionFailures"] == [
        {
            "package": "tests/test_flaky.py",
            "test": "test_flip",
            "flakyAtBase": True,
            "brokenAtBase": False,
            "baseFails": 2,
            "basePasses": 1,
            "unclassified": False,
        }
    ]
    assert flaky["correctExcludingBaseFlakes"] is True
    views = json.loads(
        (kit.out / "attempts" / "t-flaky" / "a" / "rep-1" / "verification.json").read_text()
    )["views"]
    assert [o["id"] for o in views["candidate"]["observations"]] == [
        "hidden-acceptance",
        "pytest-0",
        "pytest-1",
    ]
    assert "protected" not in views
    assert views["independent"]["observed"] == views["independent"]["expected"] == 3

    both = kit.record("t-both", "a")
    assert both["regressionFailedTests"] == [
        "tests/test_broken.py::test_always",
        "tests/test_flaky.py::test_flip",
    ]
    assert all(f["brokenAtBase"] for f in both["regressionFailures"])
    assert both["correctExcludingBaseFlakes"] is False

    a = next(v for v in kit.report()["variants"] if v["name"] == "a")
    assert (a["correct"], a["correctExcludingBaseFlakes"]) == (0, 1)
    markdown = (kit.out / "report.md").read_text()
    assert "tests/test_flaky.py::test_flip [flaky at base (2/3 failed)]" in markdown
    assert "tests/test_broken.py::test_always [broken at base]" in markdown
    assert "failed check `pytest-1` (candidate view, exit 1)" in markdown


def test_candidate_test_files_keep_the_candidates_version_in_the_protected_view(kit: Kit) -> None:
    allowed = ("calc.py", "tests/test_calc.py")
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_ACTION": "retest"}),
        b=kit.formula("b", knobs={"FAKE_OUTCOME": "failed"}),
        tasks={
            "t-exempt": kit.plan(
                "t-exempt",
                checks=["tests/test_calc.py"],
                allowed=allowed,
                candidate_test_files=("tests/test_calc.py",),
            ),
            "t-plain": kit.plan("t-plain", checks=["tests/test_calc.py"], allowed=allowed),
        },
    )
    assert "plan-has-protected-exemptions: tests/test_calc.py" in kit.cli().stdout
    kit.approve()
    exempt, plain = kit.record("t-exempt", "a"), kit.record("t-plain", "a")
    assert (exempt["correct"], exempt["requiredChecksPass"]) == (True, True)
    assert (plain["correct"], plain["requiredChecksPass"], plain["hiddenAcceptance"]) == (
        False,
        False,
        True,
    )
    assert plain["regressionFailedTests"] == [
        "tests/test_calc.py::test_mul",
        "tests/test_calc.py::test_zero",
    ]
    assert all(not f["flakyAtBase"] and not f["brokenAtBase"] for f in plain["regressionFailures"])
    assert plain["correctExcludingBaseFlakes"] is False
