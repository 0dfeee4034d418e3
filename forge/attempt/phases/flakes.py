"""The flakes phase: were the tests that failed in the views already flaky at base?

Only when the hidden acceptance passed: each pytest test that failed in a view is re-run at the
base commit (`RUNS_PER_TEST` times, at most `MAX_RERUN_TESTS` tests) in a fresh base view, and
classified flaky or broken at base. An attempt is correct excluding base flakes (V11) when it is
correct, or when the independent run was complete, the acceptance passed, and every failure of
the independent view and the Molecule names only tests flaky at base.
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass

from forge.attempt.checkouts import add_worktree
from forge.attempt.limits import Bounds
from forge.attempt.phases.context import Context
from forge.attempt.phases.score import Scored, fresh_home
from forge.attempt.record import RegressionFailure
from forge.attempt.regression import (
    MAX_RERUN_TESTS,
    RERUN_TIMEOUT_MS,
    RUNS_PER_TEST,
    classify,
    failed_tests,
    is_pytest,
    package_and_test,
    rerun_argv,
    rerun_verdict,
    unclassified_entry,
)
from forge.attempt.verify import Observation, Step, ViewResult


@dataclass(frozen=True)
class Flakes:
    """The flakes phase's result (`failed_tests` None when no test was looked at)."""

    correct_excluding_base_flakes: bool
    failed_tests: tuple[str, ...] | None = None
    truncated: bool = False
    """A view's output was cut, so more tests may have failed than are named."""
    failures: tuple[RegressionFailure, ...] | None = None


async def flakes(context: Context, scored: Scored) -> Flakes:
    """Re-run at base the tests that failed, when the hidden acceptance passed."""
    independent = scored.independent
    if not scored.verified or independent is None:
        return Flakes(correct_excluding_base_flakes=False)
    failed: dict[str, Step] = {}
    truncated = False
    failures: tuple[RegressionFailure, ...] | None = None
    if scored.hidden_acceptance:
        truncated = _failed_tests(scored.molecule, independent, failed)
        if failed:
            await context.hold("rerun")
            failures = tuple(await _rerun_at_base(context, failed))
    judged = scored.correct or _excluding_base_flakes(scored, independent, failures or ())
    return Flakes(
        correct_excluding_base_flakes=judged,
        failed_tests=tuple(sorted(failed)) if failed else None,
        truncated=truncated if failed else False,
        failures=failures,
    )


def _failed_tests(
    molecule: tuple[ViewResult, ...], independent: ViewResult, failed: dict[str, Step]
) -> bool:
    """Fill `failed` with each failed pytest test and the step that ran it; whether a view's
    output was cut."""
    truncated = False
    for view in (*molecule, independent):
        for observation in view.observations:
            if (
                observation.passed
                or observation.step.phase != "check"
                or not is_pytest(observation.step.argv)
            ):
                continue
            truncated = truncated or observation.result.output_capped
            parsed = failed_tests(
                observation.result.stdout.decode("utf-8", errors="replace"),
                exit_code=observation.result.exit_code,
                complete=observation.complete,
            )
            for nodeid in parsed.nodeids:
                failed.setdefault(nodeid, observation.step)
    return truncated


async def _rerun_at_base(context: Context, failed: dict[str, Step]) -> list[RegressionFailure]:
    ordered = sorted(failed, key=lambda n: package_and_test(failed[n].dir, n))
    entries = [unclassified_entry(*package_and_test(failed[n].dir, n)) for n in ordered]
    base_view = context.work / "views" / "base"
    home = await fresh_home(context, "base")
    box = context.view_sandbox(base_view, home)
    bounds = Bounds(context.spec.settings.limits, (base_view, home))
    try:
        await add_worktree(context.source, base_view, context.plan.base_commit)
        if await context.setup(base_view, home, box, bounds) is not None:
            return entries
        for position, nodeid in enumerate(ordered[:MAX_RERUN_TESTS]):
            verdicts = []
            for _ in range(RUNS_PER_TEST):
                argv = rerun_argv(failed[nodeid].argv, nodeid)
                result = await context.run_check(
                    argv, base_view, RERUN_TIMEOUT_MS, home, box, bounds
                )
                verdicts.append(
                    rerun_verdict(
                        result.stdout.decode("utf-8", errors="replace"),
                        nodeid,
                        exit_code=result.exit_code,
                        timed_out=result.timed_out,
                    )
                )
            package, test = package_and_test(failed[nodeid].dir, nodeid)
            entries[position] = classify(package, test, verdicts)
    finally:
        await asyncio.shield(asyncio.to_thread(shutil.rmtree, base_view, True))
    return entries


def _excluding_base_flakes(
    scored: Scored, independent: ViewResult, failures: tuple[RegressionFailure, ...]
) -> bool:
    """V11: judged from the independent run, and the Molecule's failures must agree."""
    flaky = {f"{f.package}::{f.test}" for f in failures if f.flaky_at_base and not f.unclassified}
    if independent.error is not None or len(independent.observations) != len(independent.steps):
        return False
    if scored.hidden_acceptance is not True:
        return False
    observed = [o for v in (independent, *scored.molecule) for o in v.observations]
    return all(_only_flaky(o, flaky) for o in observed if not o.passed)


def _only_flaky(observation: Observation, flaky: set[str]) -> bool:
    """A failed pytest check whose complete stream names only flaky-at-base tests."""
    if observation.step.phase != "check" or not is_pytest(observation.step.argv):
        return False
    parsed = failed_tests(
        observation.result.stdout.decode("utf-8", errors="replace"),
        exit_code=observation.result.exit_code,
        complete=observation.complete,
    )
    return bool(parsed.nodeids) and not parsed.unattributed and set(parsed.nodeids) <= flaky
