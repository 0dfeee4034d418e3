"""The score phase: verification of the captured change in views forge builds.

Verification runs on a tree forge built from the base commit and the captured change to the
allowed files (`scoped_commit`): nothing else the recipe wrote reaches it. Each view is a fresh
worktree of the attempt source with a fresh home and its own sandbox, which shows that view, its
home and the source's git folder (read-only), never the recipe's trees. The Molecule is the
candidate view (the change as is, failing fast) and, when it passes, the protected view (test
files and original check files restored from base); the independent view runs every step with
the same files restored. Correct: completed, in scope, the Molecule passed and the independent
view passed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge.attempt.checkouts import add_worktree, list_files, restore_from, scoped_commit
from forge.attempt.errors import RunAborted
from forge.attempt.limits import Bounds
from forge.attempt.phases.capture import Captured
from forge.attempt.phases.context import Context
from forge.attempt.phases.solve import Solved
from forge.attempt.plan import is_test_file
from forge.attempt.record import FailedCommand
from forge.attempt.verify import Step, ViewResult, run_view, view_steps
from forge.git import GitError

SCORED_OUTCOMES = ("completed", "no-change")
"""A coding outcome whose change is verified."""


@dataclass(frozen=True)
class Scored:
    """The score phase's result: the verdicts, the views that gave them, and the failures."""

    verified: bool
    hidden_acceptance: bool | None
    required_checks_pass: bool | None
    correct: bool
    error: str | None = None
    """Why verification could not build its tree (None when it could, or never tried)."""
    failed: tuple[FailedCommand, ...] = ()
    molecule: tuple[ViewResult, ...] = ()
    independent: ViewResult | None = None
    views: dict[str, Any] = field(default_factory=dict)
    """Each view's `verification.json` entry, in the order they ran."""


async def score(context: Context, solved: Solved, captured: Captured) -> Scored:
    """Verify the change when the attempt is valid and its coding completed (or changed
    nothing); otherwise the verdicts an unverified attempt gets."""
    required = _required_exist(context)
    unverified = Scored(
        verified=False, hidden_acceptance=None, required_checks_pass=None, correct=False
    )
    if solved.invalid:
        return unverified
    change = captured.change
    if change is None or solved.outcome not in SCORED_OUTCOMES:
        return unverified
    await context.hold("verify")
    plan = context.plan
    steps = view_steps(
        plan.setup,
        plan.checks,
        context.spec.variant.formula.checks,
        context.spec.settings.acceptance_timeout_ms,
    )
    restore = await _restore_paths(context)
    try:
        commit = await scoped_commit(
            context.source,
            plan.base_commit,
            change.capture,
            plan.allowed_files,
            context.work / "scoped-index",
        )
    except GitError as error:
        return dataclasses.replace(
            unverified, error=f"verification could not build its tree: {error}"
        )
    views = _Views(context, commit, steps)
    candidate = await views.run("candidate", [], fail_fast=True)
    molecule = [candidate]
    if candidate.passed:
        molecule.append(await views.run("protected", restore, fail_fast=True))
    independent = await views.run("independent", restore, fail_fast=False)
    molecule_pass = all(v.passed for v in molecule) and len(molecule) == 2
    acceptance = independent.acceptance()
    return Scored(
        verified=True,
        hidden_acceptance=(
            acceptance.passed if acceptance is not None and acceptance.complete else None
        ),
        required_checks_pass=(
            len(molecule) == 2 and all(_required_observed_and_passed(v) for v in molecule)
            if required
            else None
        ),
        correct=(
            solved.outcome == "completed"
            and not change.violations
            and molecule_pass
            and independent.passed
        ),
        failed=tuple(_failures(context, molecule)),
        molecule=tuple(molecule),
        independent=independent,
        views=views.documents,
    )


def _required_exist(context: Context) -> bool:
    return bool(context.plan.checks or context.spec.variant.formula.checks)


async def _restore_paths(context: Context) -> list[str]:
    """Existing test files and originalCheckFiles, minus candidateTestFiles (O-22, V12)."""
    plan = context.plan
    base_files = set(await list_files(context.source, plan.base_commit))
    exempt = set(plan.candidate_test_files)
    wanted = {p for p in base_files if is_test_file(p)} | (
        set(plan.original_check_files) & base_files
    )
    return sorted(wanted - exempt)


class _Views:
    """The verification views of one commit, each in a fresh worktree with a fresh home."""

    def __init__(self, context: Context, commit: str, steps: tuple[Step, ...]) -> None:
        self.context = context
        self.commit = commit
        self.steps = steps
        self.documents: dict[str, Any] = {}

    async def run(self, name: str, restore: list[str], *, fail_fast: bool) -> ViewResult:
        context = self.context
        path = context.work / "views" / name
        home = await fresh_home(context, name)
        await add_worktree(context.source, path, self.commit)
        await restore_from(path, context.plan.base_commit, restore)
        result = await run_view(
            name,
            context.source,
            path,
            self.steps,
            fail_fast=fail_fast,
            env=context.check_env(home),
            clock=context.clock,
            acceptance_script=self._acceptance_script,
            sandbox=context.view_sandbox(path, home),
            bounds=Bounds(context.spec.settings.limits, (path, home)),
        )
        for observation in result.observations:
            context.meter.add(observation.result)
        self.documents[name] = result.to_json()
        return result

    async def _acceptance_script(self, view: str) -> Path:
        """Verified acceptance bytes in a private 0500 file outside every view (V7)."""
        spec = self.context.spec
        rel = spec.task.acceptance_file
        data = await asyncio.to_thread((spec.inputs_dir / rel).read_bytes)
        if hashlib.sha256(data).hexdigest() != spec.pins[rel]:
            raise RunAborted(f"input changed: {rel}")
        script = self.context.work / "acceptance" / f"{view}-acceptance"
        await asyncio.to_thread(_write_executable, script, data)
        return script


async def fresh_home(context: Context, view: str) -> Path:
    """An empty home for one view's steps: nothing the recipe or another view left there."""
    home = context.work / "homes" / view
    await asyncio.to_thread(home.mkdir, parents=True)
    return home


def _failures(context: Context, molecule: list[ViewResult]) -> list[FailedCommand]:
    """The Molecule's failed steps, as the record lists them."""
    return [
        context.failed(
            "setup" if observation.step.phase == "setup" else "check",
            observation.step.id,
            view.name,
            observation.result,
        )
        for view in molecule
        for observation in view.observations
        if not observation.passed
    ]


def _required_observed_and_passed(view: ViewResult) -> bool:
    """Every non-acceptance step of the view ran and passed."""
    if view.error is not None:
        return False
    by_id = {(o.step.phase, o.step.id): o for o in view.observations}
    return all(
        (step.phase, step.id) in by_id and by_id[(step.phase, step.id)].passed
        for step in view.steps
        if step.phase != "acceptance"
    )


def _write_executable(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    path.write_bytes(data)
    path.chmod(0o500)
