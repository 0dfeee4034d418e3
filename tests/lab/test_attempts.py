"""Attempts end to end through `forge evaluate` (rows A1-A14, V1-V4, V13, C15, I1)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess

import pytest

from .kit import NO_USERNS_BWRAP, Kit, git

LAYOUT_ONLY = {"FORGE_LAB_BWRAP": str(NO_USERNS_BWRAP)}
"""The caller's environment where bubblewrap cannot run: the layout seal alone."""


def test_isolated_attempts_fix_beats_no_change(kit: Kit) -> None:
    before = (
        git(kit.repo, "worktree", "list"),
        git(kit.repo, "show-ref"),
        (kit.repo / ".git" / "config").read_text(),
    )
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_ACTION": "none", "FAKE_OUTCOME": "no-change"}),
        b=kit.formula("b"),
        tasks={"t1": kit.plan("t1", checks=["tests/test_calc.py"])},
    )
    result = kit.approve(env={"SECRET_TOKEN": "do-not-leak-123"})
    assert result.returncode == 2, result.stderr  # a is not correct
    a, b = kit.record("t1", "a"), kit.record("t1", "b")
    assert (b["correct"], b["hiddenAcceptance"], b["requiredChecksPass"], b["scopeOK"]) == (
        True,
        True,
        True,
        True,
    )
    assert b["changedFiles"] == ["calc.py"]
    assert (a["outcome"], a["correct"], a["hiddenAcceptance"], a["verified"]) == (
        "no-change",
        False,
        False,
        True,
    )

    probes = kit.probes()
    assert [p["coordinate"] for p in probes] == ["t1/a/rep-1", "t1/b/rep-1"]
    for probe in probes:
        assert probe["revList"] == [kit.base]
        assert probe["head"] == kit.base
        assert probe["origin"] == "https://github.com/owner/repo.git"
        assert probe["refspec"] == "+refs/forge-none/*:refs/forge-none/*"
        assert probe["fetchHead"] is False
        assert probe["cwd"].startswith("/tmp/forge-attempt-t1.")
        assert probe["cwd"].endswith("/workspace")
        assert probe["stdin"] == probe["taskFile"]
        task = json.loads(probe["stdin"])
        assert task["title"] == "Fix add (t1)"
        assert "acceptance" not in probe["stdin"]
        assert "SECRET_TOKEN" not in probe["env"]
        assert probe["env"]["HOME"] == probe["cwd"].removesuffix("workspace") + "home"
        assert probe["pgid"] == probe["sid"]
        assert set(probe["env"]) <= {
            "PATH",
            "HOME",
            "LANG",
            "TMPDIR",
            "FORGE_TASK_FILE",
            "FORGE_MODEL",
            "FORGE_ATTEMPT_ID",
            "PYTHONDONTWRITEBYTECODE",
            "PWD",  # bubblewrap's, after --chdir
        } | {k for k in probe["env"] if k.startswith("FAKE_")}
        assert probe["env"].get("PWD", probe["cwd"]) == probe["cwd"]

    rep = kit.out / "attempts" / "t1" / "b" / "rep-1"
    assert sorted(p.name for p in rep.iterdir()) == [
        "attempt.json",
        "changes.diff",
        "changes.json",
        "transcript",
        "verification.json",
    ]
    assert json.loads((rep / "changes.json").read_text()) == {
        "schemaVersion": 1,
        "paths": [{"path": "calc.py", "status": "M"}],
    }
    scratch = kit.root / "scratch"
    git(kit.root, "clone", "-q", str(kit.repo), str(scratch))
    git(scratch, "checkout", "-q", kit.base)
    git(scratch, "apply", str(rep / "changes.diff"))
    assert "return a + b" in (scratch / "calc.py").read_text()

    after = (
        git(kit.repo, "worktree", "list"),
        git(kit.repo, "show-ref"),
        (kit.repo / ".git" / "config").read_text(),
    )
    assert after == before

    report = kit.report()
    assert report["status"] == "complete"
    assert report["approval"]["digest"] == kit.digest()
    assert [a["class"] for a in report["attempts"]] == ["failed", "accepted"]
    assert (kit.out / "report.md").read_text().count("## Attempts") == 1
    inputs = kit.out / "inputs"
    assert oct((inputs / "t1" / "acceptance.sh").stat().st_mode & 0o777) == "0o400"


def test_misbehaving_harnesses_are_recorded_and_the_run_goes_on(kit: Kit) -> None:
    tasks = {
        "garbage": kit.plan("garbage", knobs={"FAKE_STDOUT": "garbage"}),
        "two": kit.plan("two", knobs={"FAKE_STDOUT": "two"}),
        "empty": kit.plan("empty", knobs={"FAKE_STDOUT": "empty", "FAKE_SECRET": "1"}),
        "outside": kit.plan("outside", knobs={"FAKE_ACTION": "outside"}),
        "stray": kit.plan("stray", knobs={"FAKE_STRAY": "1"}),
        "failed": kit.plan("failed", knobs={"FAKE_OUTCOME": "failed"}),
        "blocked": kit.plan("blocked", knobs={"FAKE_OUTCOME": "scope-change"}),
        "transient-outside": kit.plan(
            "transient-outside", knobs={"FAKE_TRANSIENT": "1:ECONNRESET", "FAKE_ACTION": "outside"}
        ),
        "permission": kit.plan(
            "permission", knobs={"FAKE_TRANSIENT": "1:permission_error: ECONNRESET"}
        ),
        "setup": kit.plan(
            "setup", setup=[{"id": "no", "argv": ["false"], "dir": ".", "timeoutMs": 5000}]
        ),
    }
    kit.cohort(a=kit.formula("a"), b=kit.formula("b", knobs={"FAKE_COST": "0.5"}), tasks=tasks)
    result = kit.approve("--parallel", "4")
    assert result.returncode == 2, result.stderr
    for variant in ("a", "b"):
        for name in ("garbage", "two", "empty"):
            record = kit.record(name, variant)
            assert (record["outcome"], record["error"], record["hiddenAcceptance"]) == (
                "failed",
                "invalid harness output",
                None,
            )
        assert "ghp_" not in json.dumps(kit.record("garbage", variant))
        assert "[REDACTED]" in kit.record("garbage", variant)["harnessOutput"]["stdoutTail"]
        assert "[REDACTED]" in kit.record("empty", variant)["harnessOutput"]["stderrTail"]
        outside = kit.record("outside", variant)
        assert (outside["scopeOK"], outside["scopeViolations"], outside["correct"]) == (
            False,
            ["README"],
            False,
        )
        assert outside["hiddenAcceptance"] is True
        assert kit.record("stray", variant)["strayProcessesKilled"] == 1
        assert kit.record("stray", variant)["correct"] is True
        assert kit.record("failed", variant)["hiddenAcceptance"] is None
        assert kit.record("blocked", variant)["outcome"] == "scope-change"
        setup = kit.record("setup", variant)
        assert (setup["outcome"], setup["hiddenAcceptance"]) == ("setup-failed", None)
        assert setup["failedCheckOutput"][0]["phase"] == "setup"
        for name in ("transient-outside", "permission"):
            record = kit.record(name, variant)
            assert len(record["invocations"]) == 1
            assert (record["outcome"], record.get("invalid")) == ("failed", None)
    assert "setup" not in {p["coordinate"].split("/")[0] for p in kit.probes()}
    b = next(v for v in kit.report()["variants"] if v["name"] == "b")
    assert b["scopeViolations"] == 2
    assert b["scopeChanges"] == 1
    assert b["costCoverage"] == {"reported": 6, "of": 10}
    assert b["correct"] == 1
    assert "parallel" in kit.record("stray", "a")
    assert any("contention" in n for n in kit.report()["notes"])


@pytest.mark.parametrize("sandboxed", [True, False])
def test_timeout_kills_a_hung_harness_and_its_escaped_child(kit: Kit, sandboxed: bool) -> None:
    """A child that outlives its harness is killed by its marker variable and counted. On a
    timeout, without the sandbox the escaped child is found the same way; in the sandbox it never
    leaves the command's tree (the PID namespace), so it is killed with the tree."""
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_HANG": "1", "FAKE_STRAY": "1"}, timeout_ms=1500),
        b=kit.formula("b", knobs={"FAKE_STRAY": "1"}),
        tasks={"t1": kit.plan("t1")},
    )
    result = kit.approve(env=None if sandboxed else LAYOUT_ONLY)
    assert result.returncode == 2, result.stderr
    hung = kit.record("t1", "a")
    assert (hung["outcome"], hung["timedOut"], hung["hiddenAcceptance"]) == (
        "timed-out",
        True,
        None,
    )
    assert (hung["seal"]["sandbox"] is not None) is sandboxed
    assert hung["strayProcessesKilled"] == (0 if sandboxed else 1)
    assert kit.record("t1", "b")["strayProcessesKilled"] == 1
    assert kit.record("t1", "b")["correct"] is True
    assert next(v for v in kit.report()["variants"] if v["name"] == "a")["timeouts"] == 1


def test_keep_workspaces_retains_the_trees(kit: Kit) -> None:
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_ACTION": "none"}),
        b=kit.formula("b"),
        tasks={"t1": kit.plan("t1")},
    )
    kit.approve("--keep-workspaces")
    work = kit.out / "attempts" / "t1" / "b" / "rep-1" / "work"
    private = work.resolve()
    try:
        assert work.is_symlink()
        assert not private.is_relative_to(kit.out)
        assert oct(private.stat().st_mode & 0o777) == "0o700"
        assert (work / "workspace" / "calc.py").read_text().count("a + b") == 1
        listed = subprocess.run(
            ["git", "worktree", "list"],
            cwd=work / "source",
            capture_output=True,
            text=True,
            check=True,
        )
        assert "views/candidate" in listed.stdout
    finally:
        for rep in (kit.out / "attempts").glob("*/*/rep-*/work"):
            shutil.rmtree(rep.resolve())


def test_a_tampered_input_aborts_the_run(kit: Kit) -> None:
    """With the layout seal alone a recipe that knows `--out` can write there: the re-hash
    before the acceptance runs catches it. In the sandbox it cannot even see the file."""
    target = kit.out / "inputs" / "t1" / "acceptance.sh"
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_ACTION": f"tamper:{target}"}),
        b=kit.formula("b"),
        tasks={"t1": kit.plan("t1")},
    )
    result = kit.approve(env=LAYOUT_ONLY)
    assert result.returncode == 1, result.stderr
    report = kit.report()
    assert report["status"] == "aborted"
    assert report["abortReason"] == "input changed: t1/acceptance.sh"
    assert len(kit.probes()) == 1
    assert not (kit.out / "attempts" / "t1" / "a" / "rep-1").exists()


def test_a_sandboxed_recipe_cannot_reach_the_inputs(kit: Kit) -> None:
    target = kit.out / "inputs" / "t1" / "acceptance.sh"
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_ACTION": f"tamper:{target}"}),
        b=kit.formula("b"),
        tasks={"t1": kit.plan("t1")},
    )
    result = kit.approve()
    assert result.returncode == 2, result.stderr
    assert kit.report()["status"] == "complete"
    assert "FileNotFoundError" in kit.record("t1", "a")["harnessOutput"]["stderrTail"]
    assert b"tampered" not in target.read_bytes()


def test_big_change_is_capped(kit: Kit) -> None:
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_ACTION": "big"}),
        b=kit.formula("b", knobs={"FAKE_OUTCOME": "failed"}),
        tasks={"t1": kit.plan("t1")},
    )
    kit.approve()
    rep = kit.out / "attempts" / "t1" / "a" / "rep-1"
    diff = (rep / "changes.diff").read_bytes()
    assert len(diff) <= 5 * 1024 * 1024
    assert diff.endswith(b" bytes\n")
    assert b"# forge: diff truncated at " in diff
    record = kit.record("t1", "a")
    assert record["changesDiffTruncated"] is True
    assert record["changesDiffSha256"] == hashlib.sha256(diff).hexdigest()
