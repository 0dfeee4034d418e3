"""Learning: `forge learn`, `forge suggestion`, recurring-failure learn requests (issue #18)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forge.attempt.record import dumps_record
from forge.lab.labstate import RegisteredFormula
from forge.lab.learn_requests import after_run, run_pending
from forge.testhooks import LEARN_HOLD

from .kit import Kit
from .learn_kit import LearnKit, formula_text, record

NOW = "2026-02-01T00:00:00Z"


@pytest.fixture
def lk(tmp_path: Path) -> LearnKit:
    return LearnKit(tmp_path)


def learn(lk: LearnKit, *paths: Path) -> subprocess.CompletedProcess[str]:
    return lk.forge("learn", *map(str, paths), "--formula", str(lk.formula))


def killed_at(lk: LearnKit, phase: str, *argv: str) -> None:
    """Run `forge argv` held at `phase` (the FORGE_LEARN_HOLD test hook) and SIGKILL it there."""
    gate = lk.root / f"gate-{phase}"
    process = subprocess.Popen(
        [sys.executable, "-m", "forge.cli", *argv],
        env=lk.env(**{LEARN_HOLD.env: f"{phase}={gate}"}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not Path(f"{gate}.waiting").exists():
        assert process.poll() is None
        assert time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()


def saved_id(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout.split("saved pending suggestion ", 1)[1].split(":", 1)[0]


def test_a_proposal_is_saved_pending_shown_explanation_first_and_approve_applies_it(
    lk: LearnKit,
) -> None:
    out = lk.run(["timeout", "timeout", "ok"])
    original = lk.formula.read_text()
    suggestion_id = saved_id(learn(lk, out))
    assert lk.formula.read_text() == original, "learn never applies"
    [saved] = lk.suggestions()
    assert saved["status"] == "pending"
    assert saved["originalYaml"] == original
    assert [a["outcome"] for a in saved["evidence"]["attempts"]] == [
        "timed-out",
        "timed-out",
        "completed",
    ]
    [evidence] = [
        json.loads(line) for line in (lk.ctl / "learn-calls.jsonl").read_text().splitlines()
    ]
    assert evidence["formula"]["sha256"] == saved["originalSha256"]
    assert evidence["attempts"][0]["timedOut"] is True
    assert evidence["attempts"][0]["changes"] == []
    shown = lk.forge("suggestion", suggestion_id)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    order = [
        "Process change:",
        "Evidence and reasoning:",
        "Expected impact",
        "Evaluation",
        "--- a/a.yaml",
    ]
    assert [text.index(part) for part in order] == sorted(text.index(part) for part in order)
    assert "+  timeoutMs: 2000" in text
    approved = lk.forge("suggestion", suggestion_id, "--approve")
    assert approved.returncode == 0, approved.stderr
    assert lk.formula.read_text() == saved["proposedYaml"]
    [after] = lk.suggestions()
    assert after["status"] == "approved"
    assert after["reviewedAt"]
    again = lk.forge("suggestion", suggestion_id, "--approve")
    assert again.returncode == 1
    assert "already approved" in again.stderr


def test_approving_after_the_formula_changed_is_refused_as_stale(lk: LearnKit) -> None:
    out = lk.run(["timeout"] * 3)
    first = saved_id(learn(lk, out))
    second = saved_id(learn(lk, out))
    original_sha = lk.sha
    assert lk.forge("suggestion", first, "--approve").returncode == 0
    applied = lk.formula.read_bytes()
    stale = lk.forge("suggestion", second, "--approve")
    assert stale.returncode == 1
    assert original_sha in stale.stderr
    assert lk.sha in stale.stderr
    assert "stale" in stale.stderr
    assert lk.formula.read_bytes() == applied
    dismissed = lk.forge("suggestion", second, "--dismiss")
    assert dismissed.returncode == 0, dismissed.stderr
    assert lk.formula.read_bytes() == applied
    statuses = {s["id"]: s["status"] for s in lk.suggestions()}
    assert statuses == {first: "approved", second: "dismissed"}


@pytest.mark.parametrize("phase", ["approve-intent", "approve-applied"])
def test_an_approval_killed_mid_way_is_finished_by_the_next_call(lk: LearnKit, phase: str) -> None:
    suggestion_id = saved_id(learn(lk, lk.run(["timeout"] * 3)))
    proposed = lk.suggestions()[0]["proposedYaml"]
    killed_at(lk, phase, "suggestion", suggestion_id, "--approve")
    intent = lk.lab / "suggestions" / f"{suggestion_id}.approving.json"
    assert intent.exists()
    assert (lk.formula.read_text() == proposed) == (phase == "approve-applied")
    refused = lk.forge("suggestion", suggestion_id, "--dismiss")
    assert refused.returncode == 1
    assert "interrupted" in refused.stderr
    finished = lk.forge("suggestion", suggestion_id, "--approve")
    assert finished.returncode == 0, finished.stderr
    assert lk.formula.read_text() == proposed
    assert not intent.exists()
    assert lk.suggestions()[0]["status"] == "approved"


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("cosmetic", "only changes whitespace, comments or key order"),
        ("garbage", "not strict JSON"),
        ("fail", "exited 3: boom red"),
    ],
)
def test_a_cosmetic_or_broken_proposal_saves_nothing(lk: LearnKit, mode: str, message: str) -> None:
    lk.mode(mode)
    result = learn(lk, lk.run(["timeout"] * 3))
    assert result.returncode == 1
    assert message in result.stderr
    assert "\x1b" not in result.stderr
    assert "\u202e" not in result.stderr
    assert lk.suggestions() == []


def test_learn_refuses_unusable_evidence_before_running_anything(lk: LearnKit) -> None:
    good = lk.run(["timeout"])
    pending = good / "attempts" / "t1" / "a" / "rep-9"
    pending.mkdir()
    (pending / "changes.json").write_text("{}")
    assert "pending" in learn(lk, pending).stderr
    shutil.rmtree(pending)
    invalid = lk.run([])
    folder = invalid / "attempts" / "t1" / "a" / "rep-1"
    folder.mkdir(parents=True)
    folder.joinpath("attempt.json").write_bytes(
        dumps_record(record(1, lk.sha, invalid="model-mismatch"))
    )
    assert "invalid attempt (model-mismatch)" in learn(lk, folder).stderr
    damaged = lk.run(["timeout"])
    (damaged / "inputs" / "a.yaml").write_text("changed")
    assert "damaged Formula snapshot" in learn(lk, damaged).stderr
    lk.formula.write_text(formula_text("a", lk.ctl, timeout_ms=5))
    mixed = learn(lk, good, lk.run(["timeout"]))
    assert "different Formula snapshots" in mixed.stderr
    assert "no longer holds" in learn(lk, good).stderr
    lk.formula.write_text(formula_text("a", None))
    assert "binds no learn atom" in learn(lk, lk.run(["timeout"])).stderr
    assert lk.calls() == 0
    assert lk.suggestions() == []
    assert "takes no attempts" in lk.forge("learn", "--pending", str(good)).stderr


def formulas(lk: LearnKit) -> list[RegisteredFormula]:
    return [RegisteredFormula("a", str(lk.formula), lk.sha)]


def queue(lk: LearnKit, out: Path) -> list[str]:
    return after_run(lk.lab, out, formulas(lk), NOW)


def test_three_in_a_row_queue_exactly_one_request_per_class(lk: LearnKit) -> None:
    out = lk.run(["ok", "timeout", "timeout", "timeout", "protected", "protected"])
    assert queue(lk, out) == []
    out = lk.run(["protected"], start=7)
    lines = queue(lk, out)
    [request] = lk.requests()
    assert request["class"] == "protected-regression-failed"
    assert [a["attemptId"].split(".")[2] for a in request["attempts"]] == [
        "rep-5",
        "rep-6",
        "rep-7",
    ]
    assert any(line.startswith(f"queued learn request {request['id']}") for line in lines)
    assert any("forge learn --pending" in line for line in lines)
    queue(lk, lk.run(["protected", "protected", "protected"], start=8))
    assert len(lk.requests()) == 1, "a pending request holds its class"
    queue(lk, lk.run(["scope", "scope", "scope"], start=11))
    assert sorted(r["class"] for r in lk.requests()) == [
        "analysis-policy-violation",
        "protected-regression-failed",
    ]


def test_the_threshold_is_the_formulas_and_without_a_learn_atom_only_a_line(lk: LearnKit) -> None:
    document = json.loads(formula_text("a", None))
    document["learning"] = {"recurrenceThreshold": 2}
    lk.formula.write_text(json.dumps(document))
    lines = queue(lk, lk.run(["timeout", "timeout"]))
    assert lk.requests() == []
    assert len(lines) == 1
    assert "recurring failure process-timed-out" in lines[0]
    assert "role: learn" in lines[0]


def test_the_recurring_notice_names_only_this_runs_attempts(lk: LearnKit) -> None:
    document = json.loads(formula_text("a", None))
    document["learning"] = {"recurrenceThreshold": 3}
    lk.formula.write_text(json.dumps(document))
    assert queue(lk, lk.run(["timeout", "timeout"])) == []
    second = lk.run(["timeout"], start=3)
    [line] = queue(lk, second)
    [mine] = [
        json.loads(p.read_text())["attemptId"] for p in second.glob("attempts/**/attempt.json")
    ]
    assert f": {mine} (and 2 attempt(s) of earlier runs);" in line
    assert "rep-1" not in line
    assert "rep-2" not in line
    third = lk.run(["ok"], start=4)
    assert queue(lk, third) == []


def test_records_learn_would_refuse_end_a_streak_and_unreadable_ones_are_reported(
    lk: LearnKit,
) -> None:
    out = lk.run(["timeout"] * 4)
    bad = out / "attempts" / "t1" / "a" / "rep-2" / "attempt.json"
    bad.write_bytes(dumps_record(record(2, lk.sha, invalid="provider-unavailable")))
    assert queue(lk, out) == []
    bad.write_text("{not json")
    lines = queue(lk, out)
    assert any(line.startswith("skipped an unreadable record") for line in lines)
    assert len(lk.requests()) == 1, "an unreadable record is invisible to the streak"


async def test_a_failed_run_keeps_the_request_pending_until_new_occurrences_supersede_it(
    lk: LearnKit,
) -> None:
    queue(lk, lk.run(["timeout"] * 3))
    lk.mode("fail")
    outcome = await run_pending(lk.lab, NOW)
    assert not outcome.ok
    [failed] = lk.requests()
    assert failed["status"] == "pending"
    assert "boom red" in failed["lastError"]
    queue(lk, lk.run(["timeout", "timeout"], start=4))
    assert len(lk.requests()) == 1
    queue(lk, lk.run(["timeout"], start=6))
    statuses = sorted((r["status"], r["id"] == failed["id"]) for r in lk.requests())
    assert statuses == [("pending", False), ("superseded", True)]


async def test_a_dismissed_suggestion_refires_only_after_new_occurrences(lk: LearnKit) -> None:
    queue(lk, lk.run(["timeout"] * 3))
    assert (await run_pending(lk.lab, NOW)).ok
    [done] = lk.requests()
    assert done["status"] == "done"
    queue(lk, lk.run(["timeout"] * 3, start=4))
    assert len(lk.requests()) == 1, "the suggestion from it is pending"
    assert lk.forge("suggestion", done["suggestion"], "--dismiss").returncode == 0
    queue(lk, lk.run(["timeout"] * 2, start=7))
    pending = [r for r in lk.requests() if r["status"] == "pending"]
    [fresh] = pending
    assert [a["attemptId"].split(".")[2] for a in fresh["attempts"]] == ["rep-6", "rep-7", "rep-8"]


async def test_a_formula_change_retires_its_requests_and_the_directory_stays_bounded(
    lk: LearnKit,
) -> None:
    out = lk.run(["timeout"] * 3)
    queue(lk, out)
    lk.formula.write_text(formula_text("a", lk.ctl, timeout_ms=7))
    queue(lk, out)
    [stale] = lk.requests()
    assert stale["status"] == "stale"
    folder = lk.lab / "learn-requests"
    for index in range(25):
        copy = dict(stale, id=f"lr-old{index:08x}", createdAt=f"2025-01-01T00:00:{index:02d}Z")
        (folder / f"{copy['id']}.json").write_text(json.dumps(copy))
        (folder / f"{copy['id']}.lock").write_text("")
    queue(lk, lk.run(["ok"]))
    assert len(lk.requests()) == 20
    assert list(folder.glob("*.lock")) == []


def test_learn_pending_runs_each_request_once_and_adopts_what_a_killed_run_saved(
    lk: LearnKit,
) -> None:
    queue(lk, lk.run(["timeout"] * 3))
    killed_at(lk, "pending-saved", "learn", "--pending")
    [request] = lk.requests()
    assert request["status"] == "pending"
    assert request["intent"] is not None
    [saved] = lk.suggestions()
    adopted = lk.forge("learn", "--pending")
    assert adopted.returncode == 0, adopted.stderr
    assert f"adopted suggestion {saved['id']}" in adopted.stdout
    assert lk.calls() == 1
    [request] = lk.requests()
    assert (request["status"], request["suggestion"]) == ("done", saved["id"])
    again = lk.forge("learn", "--pending")
    assert again.stdout == "no pending learn requests\n"
    assert lk.calls() == 1
    listed = lk.forge("suggestion")
    assert f"suggestion {saved['id']} (from learn request {request['id']}) awaits review" in (
        listed.stdout
    )


def test_a_cohort_run_with_three_timeouts_queues_one_request(kit: Kit) -> None:
    """Through `forge evaluate --cohort`: the run registers itself and its Formulas in the Lab."""
    rel = kit.formula("a", knobs={"FAKE_SLEEP_S": "30"}, timeout_ms=1000)
    path = kit.cohort_dir / rel
    document = json.loads(path.read_text())
    ctl = kit.root / "learn-ctl"
    ctl.mkdir()
    learn_atom = json.loads(formula_text("a", ctl))["atoms"][1]
    document["atoms"].append(learn_atom)
    path.write_text(json.dumps(document))
    kit.cohort(
        a=rel,
        b=kit.formula("b", knobs={"FAKE_ACTION": "none"}),
        tasks={"t1": kit.plan("t1")},
        repetitions=3,
    )
    lab = kit.root / "lab"
    env = {"FORGE_LAB_DIR": str(lab)}
    first = kit.approve(env=env)
    assert first.returncode == 2, first.stderr
    assert "queued learn request" in first.stderr
    requests = sorted((lab / "learn-requests").glob("lr-*.json"))
    assert len(requests) == 1
    assert json.loads(requests[0].read_text())["class"] == "process-timed-out"
    again = kit.approve(env=env)
    assert "learn request" in again.stderr
    assert sorted((lab / "learn-requests").glob("lr-*.json")) == requests
    pending = subprocess.run(
        [sys.executable, "-m", "forge.cli", "learn", "--pending"],
        capture_output=True,
        text=True,
        env=kit.env(env),
        check=False,
        timeout=120,
    )
    assert pending.returncode == 0, pending.stderr
    assert "saved suggestion" in pending.stdout
    assert len((ctl / "learn-calls.jsonl").read_text().splitlines()) == 1
    learned = subprocess.run(
        [sys.executable, "-m", "forge.cli", "learn", str(kit.out), "--variant", "a"],
        capture_output=True,
        text=True,
        env=kit.env(env),
        check=False,
        timeout=120,
    )
    assert learned.returncode == 0, learned.stderr
