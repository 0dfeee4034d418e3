"""The scheduler through `forge evaluate`: order, parallelism, resume, stop rules, interrupts,
invalid attempts and transient provider errors (rows A1, P1-P8, R1-R9, I1-I8, M1)."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
from pathlib import Path

import psutil
import pytest

from forge.attempt.cohort import load_cohort
from forge.attempt.coordinates import Coordinate
from forge.attempt.run import run_attempt
from forge.attempt.settings import LabSettings
from forge.attempt.spec import AttemptSpec
from forge.clock import SYSTEM_CLOCK

from .kit import Kit, marker_processes, normalised, wait_for

LOCALHOST = {"ANTHROPIC_BASE_URL": "http://localhost:1"}


def two_by_two(kit: Kit, **a_knobs: str) -> None:
    kit.cohort(
        a=kit.formula("a", knobs=a_knobs or None),
        b=kit.formula("b", knobs={"FAKE_ACTION": "none", "FAKE_OUTCOME": "no-change"}),
        tasks={"t1": kit.plan("t1"), "t2": kit.plan("t2")},
        repetitions=2,
    )


def started_order(out: Path) -> list[str]:
    lines = [json.loads(line) for line in (out / "lab.log").read_text().splitlines()]
    return [line["coordinate"] for line in lines if line["record"] == "lab_attempt_started"]


ORDER = [
    "t1/a/rep-1",
    "t1/b/rep-1",
    "t1/a/rep-2",
    "t1/b/rep-2",
    "t2/a/rep-1",
    "t2/b/rep-1",
    "t2/a/rep-2",
    "t2/b/rep-2",
]


def test_order_resume_and_parallel_report_equality(kit: Kit) -> None:
    two_by_two(kit)
    first = kit.approve()
    assert first.returncode == 2, first.stderr
    probes = kit.probes()
    assert [p["coordinate"] for p in probes] == ORDER
    intervals = sorted((p["start"], p["end"]) for p in probes)
    assert all(end <= next_start for (_, end), (next_start, _) in itertools.pairwise(intervals))
    assert sorted(p.name for p in (kit.out / "attempts" / "t2" / "b").iterdir()) == [
        "rep-1",
        "rep-2",
    ]
    report_bytes = (kit.out / "report.json").read_bytes()
    assert kit.report()["status"] == "complete"

    again = kit.approve()
    assert again.returncode == 2
    assert len(kit.probes()) == 8
    assert (kit.out / "report.json").read_bytes() == report_bytes

    (kit.out / "attempts" / "t2" / "a" / "rep-1" / "attempt.json").unlink()
    resumed = kit.approve("--parallel", "3")
    assert resumed.returncode == 2
    assert [p["coordinate"] for p in kit.probes()[8:]] == ["t2/a/rep-1"]
    assert kit.record("t2", "a", 1)["parallel"] == 3
    assert any("contention" in n for n in kit.report()["notes"])

    other = kit.root / "out3"
    digest = kit.digest(out=other)
    parallel = kit.cli("--approve", digest, "--parallel", "3", out=other)
    assert parallel.returncode == 2, parallel.stderr
    assert started_order(other) == ORDER
    runs = [(p["start"], p["end"]) for p in kit.probes()[9:]]
    assert max(sum(1 for s, e in runs if s <= t < e) for t, _ in runs) <= 3
    third = json.loads((other / "report.json").read_text())
    assert normalised(third)["attempts"] == normalised(kit.report())["attempts"]
    assert normalised(third)["variants"] == normalised(kit.report())["variants"]


def test_a_different_digest_is_refused_and_nothing_changes(kit: Kit) -> None:
    kit.cohort(a=kit.formula("a"), b=kit.formula("b", model="m2"), tasks={"t1": kit.plan("t1")})
    kit.approve()
    snapshot = {p: p.read_bytes() for p in kit.out.rglob("*") if p.is_file()}
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_SLEEP_S": "0"}),
        b=kit.formula("b", model="m2"),
        tasks={"t1": kit.plan("t1")},
    )
    refused = kit.approve()
    assert refused.returncode == 1
    assert "holds a run with activation digest" in refused.stderr
    assert {p: p.read_bytes() for p in kit.out.rglob("*") if p.is_file()} == snapshot


def test_max_attempts_stops_with_imbalance_and_never_overshoots(kit: Kit) -> None:
    kit.cohort(
        a=kit.formula("a"),
        b=kit.formula("b", model="m2", knobs={"FAKE_MODEL": "m2"}),
        tasks={"t1": kit.plan("t1"), "t2": kit.plan("t2")},
        stop={"maxAttempts": 3},
    )
    result = kit.approve("--parallel", "4")
    assert result.returncode == 0, result.stderr
    assert len(kit.probes()) == 3
    report = kit.report()
    assert (report["status"], report["stopReason"]) == ("stopped", "maxAttempts 3 reached")
    assert [v["attempts"] for v in report["variants"]] == [2, 1]
    assert any(n.startswith("Imbalance: a has 2 attempt(s) and b 1") for n in report["notes"])
    assert kit.approve().returncode == 0
    assert len(kit.probes()) == 3


def test_cost_limit_counts_reported_cost_and_names_the_basis(kit: Kit) -> None:
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_COST": "0.6"}),
        b=kit.formula("b", knobs={"FAKE_COST": "0.6", "FAKE_BASIS": "list-price-estimate"}),
        tasks={"t1": kit.plan("t1"), "t2": kit.plan("t2")},
        stop={"maxCostUSD": 1},
    )
    assert kit.approve().returncode == 0
    report = kit.report()
    assert len(kit.probes()) == 2
    assert report["status"] == "stopped"
    assert (
        report["stopReason"] == "maxCostUSD 1 reached: reported cost 1.2 USD "
        "(basis: mixed (1 list-price-estimate, 1 reported))"
    )


def test_cost_limit_never_fires_without_reported_cost(kit: Kit) -> None:
    kit.cohort(
        a=kit.formula("a"),
        b=kit.formula("b", model="m2", knobs={"FAKE_MODEL": "m2"}),
        tasks={"t1": kit.plan("t1"), "t2": kit.plan("t2")},
        stop={"maxCostUSD": 0.01},
    )
    assert kit.approve("--parallel", "2").returncode == 0
    assert kit.report()["status"] == "complete"


def test_model_mismatch_on_a_variants_first_attempt_stops_the_run(kit: Kit) -> None:
    kit.cohort(
        a=kit.formula("a"),
        b=kit.formula("b", knobs={"FAKE_MODEL": "x"}),
        tasks={"t1": kit.plan("t1"), "t2": kit.plan("t2")},
    )
    result = kit.approve()
    assert result.returncode == 2
    report = kit.report()
    assert report["stopReason"] == "variant b was not served its pinned model (m1 → x)"
    record = kit.record("t1", "b")
    assert (record["invalid"], record["hiddenAcceptance"], record["correct"]) == (
        "model-mismatch",
        None,
        False,
    )
    assert len(kit.probes()) == 2
    assert sum("invalid attempt" in n for n in report["notes"]) == 1


def test_a_model_mismatch_on_a_later_repetition_is_recorded_and_the_run_goes_on(kit: Kit) -> None:
    """I4, second half: only b's rep-2 is served another model; that is not its first attempt."""
    kit.cohort(
        a=kit.formula("a"),
        b=kit.formula("b", knobs={"FAKE_MODEL": "x", "FAKE_MODEL_ON_REP": "2"}),
        tasks={"t1": kit.plan("t1")},
        repetitions=3,
    )
    result = kit.approve()
    assert result.returncode == 2, result.stderr
    report = kit.report()
    assert (report["status"], report["stopReason"]) == ("complete", None)
    assert [p["coordinate"] for p in kit.probes()] == [
        f"t1/{variant}/rep-{rep}" for rep in (1, 2, 3) for variant in ("a", "b")
    ]
    mismatched = kit.record("t1", "b", 2)
    assert (mismatched["invalid"], mismatched["hiddenAcceptance"], mismatched["correct"]) == (
        "model-mismatch",
        None,
        False,
    )
    assert [kit.record("t1", "b", rep)["correct"] for rep in (1, 3)] == [True, True]
    b = report["variants"][1]
    assert (b["attempts"], b["invalid"], b["invalidReasons"]) == (3, 1, {"model-mismatch": 1})
    assert (b["hiddenAcceptanceN"], b["correct"]) == (2, 2)
    assert b["effectiveModels"] == {"m1": 2, "x": 1}
    assert sum("1 invalid attempt" in n for n in report["notes"]) == 1


def test_transient_errors_resume_then_exhaust_and_a_resume_reruns(kit: Kit) -> None:
    switch = kit.ctl / "transient"
    switch.write_text("9:connect ETIMEDOUT 1.2.3.4:443")
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_TRANSIENT": "1:read ECONNRESET", "FAKE_COST": "0.1"}),
        b=kit.formula("b", knobs={"FAKE_TRANSIENT_FILE": str(switch), "FAKE_COST": "0.1"}),
        tasks={"t1": kit.plan("t1")},
    )
    result = kit.approve(env=LOCALHOST)
    assert result.returncode == 2, result.stderr
    a = kit.record("t1", "a")
    assert [i["classification"] for i in a["invocations"]] == ["transient-provider-error", None]
    assert a["invocations"][1]["resumed"] == "resumed after transient-provider-error (1 of 2)"
    assert (a["costUsd"], a["correct"]) == (0.2, True)
    second_stdin = json.loads(kit.probes()[1]["stdin"])
    assert second_stdin["instructions"][0].startswith(
        "The previous attempt was interrupted by a provider network error"
    )
    b = kit.record("t1", "b")
    assert len(b["invocations"]) == 3
    assert b["invalid"] == "provider-unavailable"
    assert b["error"].startswith(
        "transient-provider-error retries exhausted after 2 automatic resumes "
        "and 2 provider checks; last error: connect ETIMEDOUT"
    )
    assert b["transientExhausted"] == [i["id"] for i in b["invocations"]]

    switch.unlink()
    resumed = kit.approve(env=LOCALHOST)
    assert resumed.returncode == 0, resumed.stderr
    assert [p["coordinate"] for p in kit.probes()[5:]] == ["t1/b/rep-1"]
    assert (kit.out / "superseded" / "t1" / "b" / "rep-1" / "1" / "attempt.json").exists()
    again = kit.record("t1", "b")
    assert (again["correct"], again["supersededCostUsd"]) == (True, 0.3)
    assert next(v for v in kit.report()["variants"] if v["name"] == "b")["supersededCostUsd"] == 0.3


async def test_an_unresolvable_provider_host_uses_checks_not_resumes(kit: Kit) -> None:
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_TRANSIENT": "1:ECONNREFUSED"}),
        b=kit.formula("b"),
        tasks={"t1": kit.plan("t1")},
    )
    cohort = load_cohort(kit.cohort_dir / "cohort.json")
    answers = iter([False, False, True])
    asked: list[str] = []

    async def resolver(host: str) -> bool:
        asked.append(host)
        return next(answers)

    spec = AttemptSpec(
        coordinate=Coordinate(0, "t1", 1, "a"),
        attempt_id="direct.a.1",
        attempt_dir=kit.root / "direct",
        inputs_dir=kit.cohort_dir,
        pins={**cohort.pins()},
        task=cohort.tasks[0],
        variant=cohort.variants[0],
        source=kit.repo,
        origin=None,
        caller_env={"PATH": os.environ["PATH"]},
        settings=LabSettings(transient_waits_s=(0.01, 0.02), sandbox_binds=(str(kit.ctl),)),
    )
    (kit.root / "direct").mkdir()
    record = await run_attempt(spec, clock=SYSTEM_CLOCK, resolver=resolver)
    assert asked == ["api.anthropic.com"] * 3
    assert [n for n in record.notes or [] if "did not resolve" in n] == [
        "provider host api.anthropic.com did not resolve (check 1 of 4)",
        "provider host api.anthropic.com did not resolve (check 2 of 4)",
    ]
    assert record.invocations
    assert record.invocations[1].resumed == "resumed after transient-provider-error (1 of 2)"
    assert record.correct is True


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_discards_in_flight_attempts_and_resume_matches_a_clean_run(
    kit: Kit, signum: int, code: int
) -> None:
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_GATE": "1"}),
        b=kit.formula(
            "b", knobs={"FAKE_GATE": "1", "FAKE_ACTION": "none", "FAKE_OUTCOME": "no-change"}
        ),
        tasks={"t1": kit.plan("t1")},
        repetitions=2,
    )
    digest = kit.digest()
    process = kit.start("--approve", digest, "--parallel", "2")
    wait_for(kit.ctl, "started-*", 2, process)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == code, stderr
    assert "interrupted by" in stderr
    assert marker_processes(str(kit.ctl)) == []
    assert not list((kit.out / "attempts").rglob("attempt.json"))
    assert not (kit.out / "attempts" / "t1" / "a" / "rep-1").exists()
    assert [p for p in (kit.out / "attempts").glob("*/*/rep-*")] == []
    report = kit.report()
    name = signal.Signals(signum).name
    assert report["status"] == "aborted"
    assert report["abortReason"] == f"interrupted by {name}"
    history = report["history"]
    assert (history["interruptions"], history["discarded"]) == (1, 2)
    words = (kit.out / "report.md").read_text().split("## History")[1]
    assert f"t1/a/rep-1 discarded (interrupted by {name})" in words
    assert f"t1/b/rep-1 discarded (interrupted by {name})" in words
    assert f"run ended aborted: interrupted by {name}" in words

    if signum == signal.SIGTERM:
        return
    (kit.ctl / "go").write_text("")
    resumed = kit.approve()
    assert resumed.returncode == 2, resumed.stderr
    assert kit.report()["history"]["resumes"] == 1
    assert "run resumed (--parallel 1)" in (kit.out / "report.md").read_text()
    clean_out = kit.root / "clean"
    clean = kit.cli("--approve", kit.digest(out=clean_out), out=clean_out)
    assert clean.returncode == 2
    clean_report = json.loads((clean_out / "report.json").read_text())
    mine, theirs = normalised(kit.report()), normalised(clean_report)
    for key in ("approval",):
        mine.pop(key)
        theirs.pop(key)
    assert mine == theirs


def test_report_is_valid_and_running_mid_run(kit: Kit) -> None:
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_GATE": "1"}),
        b=kit.formula("b", model="m2"),
        tasks={"t1": kit.plan("t1")},
    )
    process = kit.start("--approve", kit.digest())
    wait_for(kit.ctl, "started-*", 1, process)
    assert kit.report()["status"] == "running"
    (kit.ctl / "go").write_text("")
    process.communicate(timeout=90)
    assert kit.report()["status"] == "complete"
    shutil.rmtree(kit.ctl / "go", ignore_errors=True)


def test_a_runner_killed_mid_attempt_aborts_and_leaves_nothing(kit: Kit) -> None:
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_GATE": "1", "FAKE_STRAY": "1"}),
        b=kit.formula("b", model="m2"),
        tasks={"t1": kit.plan("t1")},
    )
    process = kit.start("--approve", kit.digest())
    wait_for(kit.ctl, "started-*", 1, process)
    runners = [
        p
        for p in psutil.Process(process.pid).children(recursive=True)
        if "forge.workers.lab" in " ".join(p.cmdline())
    ]
    assert len(runners) == 1
    runners[0].kill()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1, stderr
    assert "attempt runner crashed during t1/a/rep-1" in stderr
    assert kit.report()["status"] == "aborted"
    assert not (kit.out / "attempts" / "t1" / "a" / "rep-1").exists()
    assert marker_processes(str(kit.ctl)) == []


def test_a_resume_with_gaps_still_honours_max_attempts(kit: Kit) -> None:
    kit.cohort(
        a=kit.formula("a"),
        b=kit.formula("b", model="m2"),
        tasks={"t1": kit.plan("t1"), "t2": kit.plan("t2"), "t3": kit.plan("t3")},
        stop={"maxAttempts": 4},
    )
    assert kit.approve().returncode == 0
    assert len(kit.probes()) == 4
    (kit.out / "attempts" / "t2" / "a" / "rep-1" / "attempt.json").unlink()
    assert kit.approve("--parallel", "4").returncode == 0
    assert [p["coordinate"] for p in kit.probes()[4:]] == ["t2/a/rep-1"]
    report = kit.report()
    assert (report["status"], report["stopReason"]) == ("stopped", "maxAttempts 4 reached")
    assert [v["attempts"] for v in report["variants"]] == [2, 2]
