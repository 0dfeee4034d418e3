"""Failures forced through the test hooks, and cancellation at awkward phases
(rows A11, A12, A13, P8, V10, M7, O-26)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from forge.attempt.checkouts import capture_tree, unified_diff

from .kit import Kit, git, marker_processes, wait_for


def hooks(**document: object) -> dict[str, str]:
    return {"FORGE_LAB_TEST_HOOKS": json.dumps(document)}


def test_capture_and_cleanup_failures_are_recorded_not_fatal(kit: Kit) -> None:
    kit.cohort(
        a=kit.formula("a"),
        b=kit.formula("b", model="m2", knobs={"FAKE_MODEL": "m2"}),
        tasks={"t1": kit.plan("t1")},
    )
    result = kit.approve(env=hooks(fail=["capture", "cleanup"]))
    assert result.returncode == 2, result.stderr
    record = kit.record("t1", "a")
    assert record["changesError"] == "forced capture failure (test hook)"
    assert record["cleanupError"] == "forced cleanup failure (test hook)"
    assert record["verified"] is False
    notes = kit.report()["notes"]
    assert "2 attempt(s) could not capture their changes (changesError)." in notes
    assert "2 attempt(s) could not remove their workspace (cleanupError)." in notes


def test_a_report_that_cannot_be_saved_aborts(kit: Kit) -> None:
    kit.cohort(
        a=kit.formula("a"),
        b=kit.formula("b", model="m2", knobs={"FAKE_MODEL": "m2"}),
        tasks={"t1": kit.plan("t1")},
    )
    result = kit.approve(env=hooks(fail=["report-save"]))
    assert result.returncode == 1
    assert "report save failed" in result.stderr
    assert len(kit.probes()) == 1


@pytest.mark.parametrize("phase", ["capture", "rerun"])
def test_sigint_while_held_discards_the_attempt(kit: Kit, phase: str) -> None:
    kit.schedule("FFFFFF")
    gate = kit.root / "release"
    kit.cohort(
        a=kit.formula("a"),
        b=kit.formula("b", model="m2", knobs={"FAKE_MODEL": "m2"}),
        tasks={"t1": kit.plan("t1", checks=["tests/test_flaky.py"])},
    )
    hold = hooks(holds=[{"coordinate": "t1/a/rep-1", "phase": phase, "until": str(gate)}])
    process = kit.start("--approve", kit.digest(), env=hold)
    wait_for(kit.root, "release.waiting", 1, process)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    assert process.returncode == 130
    assert not (kit.out / "attempts" / "t1" / "a" / "rep-1").exists()
    assert marker_processes(str(kit.ctl)) == []

    if phase == "rerun":
        return
    gate.write_text("")
    resumed = kit.approve()
    assert resumed.returncode == 2
    assert [p["coordinate"] for p in kit.probes()] == ["t1/a/rep-1", "t1/a/rep-1", "t1/b/rep-1"]


def test_acceptance_past_its_timeout_is_not_a_verdict(kit: Kit) -> None:
    slow = "#!/bin/sh\nsleep 30\n"
    kit.cohort(
        a=kit.formula("a"),
        b=kit.formula("b", model="m2", knobs={"FAKE_MODEL": "m2"}),
        tasks={"t1": kit.plan("t1", acceptance=slow)},
    )
    kit.approve(env=hooks(acceptanceTimeoutMs=300))
    record = kit.record("t1", "a")
    assert (record["hiddenAcceptance"], record["correct"]) == (None, False)


def test_a_check_that_edits_tracked_content_fails_its_view(kit: Kit) -> None:
    kit.cohort(
        a=kit.formula(
            "a",
            checks=[
                {
                    "id": "vandal",
                    "argv": ["sh", "-c", "echo '# x' >> calc.py"],
                    "category": "lint",
                    "timeoutMs": 5000,
                }
            ],
        ),
        b=kit.formula("b", model="m2", knobs={"FAKE_MODEL": "m2"}),
        tasks={"t1": kit.plan("t1")},
    )
    kit.approve()
    record = kit.record("t1", "a")
    assert record["correct"] is False
    views = json.loads(
        (kit.out / "attempts" / "t1" / "a" / "rep-1" / "verification.json").read_text()
    )["views"]
    assert views["candidate"]["error"] == "a check changed tracked content"
    assert kit.record("t1", "b")["correct"] is True


async def test_diff_ignores_the_callers_git_configuration(
    kit: Kit, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    git(kit.repo, "worktree", "add", "-q", "--detach", str(work), kit.base)
    (work / "calc.py").write_text("changed\n")
    (work / "new file.txt").write_text("x\n")
    capture = await capture_tree(kit.repo, work, kit.base, tmp_path / "index")
    plain = await unified_diff(kit.repo, kit.base, capture.commit)
    hostile = tmp_path / "home"
    hostile.mkdir()
    (hostile / ".gitconfig").write_text(
        "[diff]\n\tnoprefix = true\n\texternal = false\n"
        "[color]\n\tui = always\n[core]\n\tquotePath = false\n"
    )
    monkeypatch.setenv("HOME", str(hostile))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(hostile / ".gitconfig"))
    assert await unified_diff(kit.repo, kit.base, capture.commit) == plain
    assert plain.startswith(b"diff --git a/calc.py b/calc.py")
    assert capture.changes == (("M", "calc.py"), ("A", "new file.txt"))
    git(kit.repo, "worktree", "remove", "--force", str(work))


def test_cli_killed_before_the_record_is_written_redoes_the_attempt(kit: Kit) -> None:
    gate = kit.root / "release"
    kit.cohort(a=kit.formula("a"), b=kit.formula("b", model="m2"), tasks={"t1": kit.plan("t1")})
    hold = hooks(holds=[{"coordinate": "t1/a/rep-1", "phase": "record", "until": str(gate)}])
    process = kit.start("--approve", kit.digest(), env=hold)
    wait_for(kit.root, "release.waiting", 1, process)
    process.kill()
    process.communicate(timeout=60)
    assert not (kit.out / "attempts" / "t1" / "a" / "rep-1" / "attempt.json").exists()
    resumed = kit.approve()
    assert resumed.returncode == 0, resumed.stderr
    assert [p["coordinate"] for p in kit.probes()] == ["t1/a/rep-1", "t1/a/rep-1", "t1/b/rep-1"]
    assert kit.record("t1", "a")["correct"] is True
