"""Verification views: setup, then hidden acceptance, then plan checks, then Formula checks.

A view is a worktree of the attempt source (forge's), built from the base commit and the captured
change to the allowed files. Once a step has run in it, forge reads the view only through the
source's git folder and a private index: a check that rewrites the view's `.git` changes nothing
forge runs. The Molecule's own verification runs the candidate
view and then the protected view, each fail-fast; the independent verification runs every step
of a protected-content view without stopping, so a flaky regression cannot hide the acceptance
result. A check that changes tracked content fails its view.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge.attempt.checkouts import content_tree, git, save_index
from forge.attempt.command import CommandResult, run_command
from forge.attempt.limits import Bounds
from forge.attempt.plan import Command
from forge.attempt.sandbox import Sandbox
from forge.clock import Clock
from forge.git import GitError

CHECK_OUTPUT_CAP = 8 * 1024 * 1024
"""Per stream; a check that prints more is killed and recorded as not complete (O-23)."""
ACCEPTANCE_ID = "hidden-acceptance"


@dataclass(frozen=True)
class Step:
    phase: str
    """`setup`, `acceptance` or `check`."""
    id: str
    argv: tuple[str, ...]
    dir: str
    timeout_ms: int
    category: str
    origin: str
    """`plan`, `formula` or `hidden`."""


@dataclass
class Observation:
    step: Step
    result: CommandResult

    @property
    def passed(self) -> bool:
        return self.result.ok and not self.result.output_capped

    @property
    def complete(self) -> bool:
        """It ran to its own exit: no timeout, no output cap, it started."""
        return (
            self.result.exit_code is not None
            and not self.result.timed_out
            and not self.result.output_capped
            and self.result.start_error is None
            and self.result.limit is None
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.step.phase,
            "id": self.step.id,
            "category": self.step.category,
            "origin": self.step.origin,
            "exitCode": self.result.exit_code,
            "timedOut": self.result.timed_out,
            "outputTruncated": self.result.output_capped,
            "passed": self.passed,
            "elapsedMs": self.result.elapsed_ms,
            **({} if self.result.limit is None else {"limit": self.result.limit}),
        }


@dataclass
class ViewResult:
    name: str
    steps: tuple[Step, ...]
    observations: list[Observation] = field(default_factory=list)
    error: str | None = None

    @property
    def passed(self) -> bool:
        return (
            self.error is None
            and len(self.observations) == len(self.steps)
            and all(o.passed for o in self.observations)
        )

    def acceptance(self) -> Observation | None:
        return next((o for o in self.observations if o.step.phase == "acceptance"), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "view": self.name,
            "passed": self.passed,
            "error": self.error,
            "observed": len(self.observations),
            "expected": len(self.steps),
            "observations": [o.to_json() for o in self.observations],
        }


def view_steps(
    setup: tuple[Command, ...],
    checks: tuple[Command, ...],
    formula_checks: tuple[Command, ...],
    acceptance_timeout_ms: int,
) -> tuple[Step, ...]:
    """Setup -> hidden acceptance -> plan checks (plan order) -> Formula baseline checks."""
    steps = [Step("setup", c.id, c.argv, c.dir, c.timeout_ms, "setup", "plan") for c in setup]
    steps.append(
        Step("acceptance", ACCEPTANCE_ID, (), ".", acceptance_timeout_ms, "acceptance", "hidden")
    )
    steps += [Step("check", c.id, c.argv, ".", c.timeout_ms, c.category, "plan") for c in checks]
    steps += [
        Step("check", c.id, c.argv, ".", c.timeout_ms, c.category, "formula")
        for c in formula_checks
    ]
    return tuple(steps)


AcceptanceScript = Callable[[str], Awaitable[Path]]
"""Given a view name, returns the path of freshly verified acceptance bytes (0500, outside it)."""


async def run_view(
    name: str,
    repo: Path,
    view: Path,
    steps: tuple[Step, ...],
    *,
    fail_fast: bool,
    env: Mapping[str, str],
    clock: Clock,
    acceptance_script: AcceptanceScript,
    sandbox: Sandbox | None = None,
    bounds: Bounds | None = None,
) -> ViewResult:
    result = ViewResult(name=name, steps=steps)
    view_env = {**env, "FORGE_EVAL_WORKSPACE": str(view)}
    # The view as checked out (its own index is exact: forge just wrote it, and no step has run
    # in it yet): no file is hashed unless a setup step ran first and may have changed some.
    start = (await git(view, "write-tree")).decode().strip()
    stat_index = view.parent / f".{view.name}.forge-stat-index"
    await save_index(view, stat_index)
    before: str | None = None
    for step in steps:
        if step.phase != "setup" and before is None:
            ran_setup = bool(result.observations)
            before = await tracked_content(repo, view, start, stat_index) if ran_setup else start
        argv = (str(await acceptance_script(name)),) if step.phase == "acceptance" else step.argv
        cwd = view if step.dir == "." else view / step.dir
        outcome = await run_command(
            argv,
            cwd=cwd,
            env=view_env,
            timeout_s=step.timeout_ms / 1000,
            clock=clock,
            output_cap=CHECK_OUTPUT_CAP,
            sandbox=sandbox,
            bounds=bounds,
        )
        observation = Observation(step, outcome)
        result.observations.append(observation)
        if fail_fast and not observation.passed:
            break
    changed = before is not None and await tracked_content(repo, view, start, stat_index) != before
    await asyncio.to_thread(stat_index.unlink, missing_ok=True)
    if result.error is None and changed:
        result.error = "a check changed tracked content"
    return result


async def tracked_content(repo: Path, view: Path, start: str, stat_index: Path) -> str:
    """A tree id of the view's files tracked in `start`, as they are on disk (read through
    `repo`'s git folder, whatever the view's `.git` now says)."""
    index = view.parent / f".{view.name}.forge-index"
    try:
        return await content_tree(repo, view, start, index, untracked=False, stat_index=stat_index)
    except GitError as error:
        return f"unreadable: {error}"
    finally:
        await asyncio.to_thread(index.unlink, missing_ok=True)
