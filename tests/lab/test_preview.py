"""Preview, digest, approval and refusals before any attempt (rows C12-C14, P1, P4, R4, R10, X1)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from .kit import PYTHON, Kit, git


@pytest.fixture
def ready(kit: Kit) -> Kit:
    kit.cohort(
        a=kit.formula("a"),
        b=kit.formula("b", model="m2", knobs={"FAKE_MODEL": "m2"}),
        tasks={"t1": kit.plan("t1")},
    )
    return kit


def test_preview_prints_digest_and_command_and_creates_nothing(ready: Kit) -> None:
    result = ready.cli()
    assert result.returncode == 0, result.stderr
    digest = ready.digest()
    assert len(digest) == 64
    assert f"--approve {digest}" in result.stdout
    assert "Nothing has been created or run" in result.stdout
    assert not ready.out.exists()
    assert ready.probes() == []


def test_digest_covers_bytes_source_and_out_not_run_flags(ready: Kit, tmp_path: Path) -> None:
    digest = ready.digest()
    assert ready.digest(out=Path(str(ready.out) + "/")) == digest
    flags = ready.cli("--parallel", "4", "--keep-workspaces")
    assert f"--approve {digest}" in flags.stdout
    assert ready.digest(out=tmp_path / "elsewhere") != digest
    issue = ready.cohort_dir / "t1" / "issue.json"
    issue.write_text(issue.read_text() + " ")
    assert ready.digest() != digest


def test_wrong_approve_is_refused_with_the_right_command(ready: Kit) -> None:
    digest = ready.digest()
    result = ready.cli("--approve", "0" * 64)
    assert result.returncode == 1
    assert f"--approve {digest}" in result.stderr
    assert not ready.out.exists()


def test_bare_source_is_refused(ready: Kit, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(ready.repo), str(bare))
    argv = ready.argv()
    argv[argv.index("--source") + 1] = str(bare)
    result = subprocess.run(argv, capture_output=True, text=True, env=ready.env())
    assert result.returncode == 1
    assert "--source must be a non-bare git checkout (replay writes <out>/source)" in result.stderr


def test_missing_base_commit_is_refused(kit: Kit) -> None:
    plan = kit.plan("t1")
    path = kit.cohort_dir / plan
    path.write_text(path.read_text().replace(kit.base, "1" * 40))
    kit.cohort(a=kit.formula("a"), b=kit.formula("b", model="m2"), tasks={"t1": plan})
    result = kit.cli()
    assert result.returncode == 1
    assert f"baseCommit {'1' * 40} is not in --source" in result.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--parallel", "0"), "--parallel must be an integer from 1 to 4"),
        (("--parallel", "5"), "--parallel must be an integer from 1 to 4"),
        (("--parallel", "x"), "--parallel must be an integer from 1 to 4"),
        (("--executor", "dask"), "--executor dask needs --scheduler"),
        (
            ("--scheduler", "tcp://127.0.0.1:1"),
            "--scheduler is only meaningful with --executor dask",
        ),
        (("--executor", "ray"), "--executor must be local or dask"),
        (("--recheck",), "cohort --recheck is not available yet"),
    ],
)
def test_flag_refusals_exit_1(ready: Kit, flags: tuple[str, ...], message: str) -> None:
    result = ready.cli(*flags)
    assert result.returncode == 1
    assert message in result.stderr


def test_non_empty_out_without_activation_is_refused(ready: Kit) -> None:
    ready.out.mkdir()
    (ready.out / "stray").write_text("x")
    result = ready.approve()
    assert result.returncode == 1
    assert "is not empty and holds no activation.json" in result.stderr
    assert ready.probes() == []


def test_a_new_allowed_file_needs_a_manifest_above_it(kit: Kit) -> None:
    kit.cohort(
        a=kit.formula("a"),
        b=kit.formula("b", model="m2"),
        tasks={"t1": kit.plan("t1", allowed=("calc.py", "newpkg/x.py"))},
    )
    assert kit.cli().returncode == 0
    git(kit.repo, "rm", "-q", "pyproject.toml")
    git(kit.repo, "commit", "-qm", "no manifest")
    plan = kit.cohort_dir / "t1" / "plan.json"
    plan.write_text(plan.read_text().replace(kit.base, git(kit.repo, "rev-parse", "HEAD")))
    kit.cohort(a=kit.formula("a"), b=kit.formula("b", model="m2"), tasks={"t1": "t1/plan.json"})
    result = kit.cli()
    assert result.returncode == 1
    assert "allowedFiles newpkg/x.py are absent at base" in result.stderr


def test_relative_and_home_paths_resolve_once_and_the_printed_command_runs(ready: Kit) -> None:
    """Issue 17: a relative --out used to abort in `git init`; `~` and relative spellings of the
    same paths approve the same digest, and the printed command runs as printed."""
    relative = ["evaluate", "--cohort", "cohort/cohort.json", "--source", "fx", "--out", "out"]
    preview = subprocess.run(
        [PYTHON, "-m", "forge.cli", *relative],
        cwd=ready.root,
        env=ready.env(),
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert preview.returncode == 0, preview.stderr
    printed = preview.stdout.strip().splitlines()[-1].strip()
    assert printed.startswith("forge " + shlex.join(relative) + " --approve ")
    assert printed.endswith(ready.digest())
    at_home = [
        *("evaluate", "--cohort", "~/cohort/cohort.json"),
        *("--source", "~/fx", "--out", "~/out"),
    ]
    tilde = subprocess.run(
        [PYTHON, "-m", "forge.cli", *at_home],
        cwd="/",
        env=ready.env({"HOME": str(ready.root)}),
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert tilde.returncode == 0, tilde.stderr
    assert f"--approve {ready.digest()}" in tilde.stdout

    run = subprocess.run(
        [PYTHON, "-m", "forge.cli", *shlex.split(printed)[1:]],
        cwd=ready.root,
        env=ready.env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert ready.report()["status"] == "complete"
    assert [p["coordinate"] for p in ready.probes()] == ["t1/a/rep-1", "t1/b/rep-1"]
