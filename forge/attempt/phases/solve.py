"""The solve phase: the plan's setup in the workspace, then the coding harness, resumed after
a transient provider error while the provider comes back (at most `MAX_RESUMES` times).

A harness run is one invocation (an agent atom's: one run of the Claude Code CLI,
`phases/agent.py`); the phase ends on a limit, a timeout, an agent's budget passed, output that
is not one valid report, a served model other than the pin, or a report that is not transient.
A transient error is not resumed after an out-of-scope write, nor when the Formula changed
during the wait.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path

import msgspec

from forge.attempt.agent_atom import AGENT_OUTPUT_CAP, BUDGET_OUTCOME
from forge.attempt.checkouts import capture_tree
from forge.attempt.command import CommandResult, Sink, run_command
from forge.attempt.harness import (
    RESUME_INSTRUCTION,
    HarnessReport,
    is_transient,
    parse_report,
    served_model_mismatch,
    task_input,
)
from forge.attempt.phases.agent import agent_run
from forge.attempt.phases.context import COMMAND_OUTPUT_CAP, Context, limited
from forge.attempt.phases.provider import Resolver, await_provider
from forge.attempt.phases.workspace import Workspace
from forge.attempt.record import (
    FailedCommand,
    Invocation,
    Tails,
    TranscriptFiles,
    Usage,
    cost_basis,
)
from forge.attempt.transcript import Transcript
from forge.git import GitError

MAX_RESUMES = 2


@dataclass(frozen=True)
class Coding:
    """The coding harness's runs: whether the last timed out, and what they cost."""

    timed_out: bool
    invocations: tuple[Invocation, ...]
    harness_ms: int

    @property
    def cost_usd(self) -> float | None:
        costs = [i.usage.cost_usd for i in self.invocations if i.usage.cost_usd is not None]
        return round(sum(costs), 6) if costs else None

    @property
    def cost_basis(self) -> str | None:
        return cost_basis(
            i.usage.cost_basis for i in self.invocations if i.usage.cost_usd is not None
        )

    @property
    def models(self) -> list[str]:
        return sorted({i.usage.model or "unknown" for i in self.invocations})

    @property
    def resumed(self) -> str | None:
        return self.invocations[-1].resumed


@dataclass(frozen=True)
class Solved:
    """The solve phase's result; `coding` is None when the harness never ran (the workspace
    could not be made, or setup failed)."""

    outcome: str
    coding: Coding | None = None
    error: str | None = None
    invalid: str | None = None
    """`model-mismatch` or `provider-unavailable`: the attempt does not count."""
    served_model: str | None = None
    transient_exhausted: tuple[str, ...] | None = None
    harness_output: Tails | None = None
    """The harness's output, when it was not one valid report."""
    notes: tuple[str, ...] = ()
    failed: tuple[FailedCommand, ...] = ()
    transcript: TranscriptFiles | None = None
    """The harness runs' streams in the attempt's folder."""


async def solve(workspace: Workspace, resolver: Resolver) -> Solved:
    """Set up, then code; nothing runs when the workspace could not be made."""
    if workspace.error is not None:
        return Solved(outcome="error", error=workspace.error)
    context = workspace.context
    failure = await context.setup(
        context.workspace, context.home, context.recipe_sandbox(), context.recipe_bounds
    )
    if failure is not None:
        command, result = failure
        return Solved(
            outcome=limited(result) or "setup-failed",
            error=f"setup {command.id} failed",
            failed=(context.failed("setup", command.id, "workspace", result),),
        )
    transcript = Transcript(context.spec.attempt_dir, context.redactor)
    try:
        solved = await _Coder(context, resolver, transcript).code()
    finally:
        files = transcript.close()
    return dataclasses.replace(solved, transcript=files)


@dataclass(frozen=True)
class _Run:
    invocation: Invocation
    report: HarnessReport | None
    result: CommandResult
    over_budget: str | None = None
    """The agent's budget passed, in words (it was cut off, or stopped itself there)."""


@dataclass(frozen=True)
class _Ending:
    """How the coding stage ended (the fields of `Solved` it sets)."""

    outcome: str
    timed_out: bool = False
    error: str | None = None
    invalid: str | None = None
    served_model: str | None = None
    transient_exhausted: tuple[str, ...] | None = None
    harness_output: Tails | None = None


class _Coder:
    """The coding stage: harness runs until one ends it, with what they noted on the way."""

    def __init__(self, context: Context, resolver: Resolver, transcript: Transcript) -> None:
        self.context = context
        self.resolver = resolver
        self.transcript = transcript
        self.invocations: list[Invocation] = []
        self.notes: list[str] = []
        self.provider_checks = 0
        self.harness_ms = 0

    async def code(self) -> Solved:
        instructions: list[str] = []
        resumed: str | None = None
        while True:
            index = len(self.invocations) + 1
            tee = self.transcript.open(f"coding run {index}: {resumed}" if resumed else None)
            run = await _invoke(self.context, index, instructions, resumed, tee)
            self.invocations.append(run.invocation)
            self.harness_ms += run.result.elapsed_ms
            ending = self._ending(run)
            if ending is None and run.report is not None:
                ending, resumed = await self._after_transient(run.invocation, run.report)
            if ending is not None:
                return self._solved(ending)
            instructions = [RESUME_INSTRUCTION]

    def _ending(self, run: _Run) -> _Ending | None:
        """How this run ends the stage; None for a transient provider error."""
        result, report = run.result, run.report
        if (outcome := limited(result)) is not None:
            return _Ending(outcome)
        if result.timed_out:
            return _Ending("timed-out", timed_out=True)
        if run.over_budget is not None:
            self.notes.append(run.over_budget)
            return _Ending(BUDGET_OUTCOME, error=run.over_budget)
        if report is None:
            tails = Tails(
                stdout_tail=self.context.redactor.tail(result.stdout),
                stderr_tail=self.context.redactor.tail(result.stderr),
            )
            return _Ending("failed", error="invalid harness output", harness_output=tails)
        outcome = report.outcome
        if outcome == "completed" and result.exit_code != 0:
            outcome = "failed"
            self.notes.append(f"the harness reported completed but exited {result.exit_code}")
        if served_model_mismatch(report, self.context.atom.model):
            return _Ending(
                outcome, invalid="model-mismatch", served_model=report.model or "unknown"
            )
        if not is_transient(report):
            return _Ending(outcome)
        return None

    async def _after_transient(
        self, invocation: Invocation, report: HarnessReport
    ) -> tuple[_Ending | None, str | None]:
        """Wait for the provider and resume (None and the resume's label), or end the stage."""
        outcome, error = report.outcome, report.error
        self.invocations[-1] = msgspec.structs.replace(
            invocation, classification="transient-provider-error", message=error
        )
        if await _wrote_out_of_scope(self.context):
            self.notes.append(
                "a transient provider error after an out-of-scope write is not resumed"
            )
            return _Ending(outcome), None
        resumes_used = len(self.invocations) - 1
        resolved = False
        if resumes_used < MAX_RESUMES:
            context = self.context
            wait = await await_provider(
                context.spec, context.clock, self.resolver, self.provider_checks
            )
            self.provider_checks, resolved = wait.checks, wait.resolved
            self.notes += wait.notes
        if not resolved:
            exhausted = (
                "transient-provider-error retries exhausted after "
                f"{resumes_used} automatic resumes and {self.provider_checks} provider checks; "
                f"last error: {error}"
            )
            ids = tuple(i.id for i in self.invocations)
            ending = _Ending(
                outcome, invalid="provider-unavailable", transient_exhausted=ids, error=exhausted
            )
            return ending, None
        if not await asyncio.to_thread(_formula_unchanged, self.context):
            self.notes.append("the Formula input changed during a provider wait; the stage stops")
            return _Ending(outcome), None
        resumed = f"resumed after transient-provider-error ({resumes_used + 1} of {MAX_RESUMES})"
        self.notes.append(resumed)
        return None, resumed

    def _solved(self, ending: _Ending) -> Solved:
        return Solved(
            outcome=ending.outcome,
            coding=Coding(ending.timed_out, tuple(self.invocations), self.harness_ms),
            error=ending.error,
            invalid=ending.invalid,
            served_model=ending.served_model,
            transient_exhausted=ending.transient_exhausted,
            harness_output=ending.harness_output,
            notes=tuple(self.notes),
        )


async def _invoke(
    context: Context,
    index: int,
    instructions: list[str],
    resumed: str | None,
    tee: tuple[Sink, Sink],
) -> _Run:
    """One run of the coding harness in the recipe's sandbox, its task file written first, its
    streams teed to the transcript."""
    spec, atom = context.spec, context.atom
    task_bytes = task_input(spec.task.issue, context.plan.allowed_files, atom.model, instructions)
    task_file = context.work / "task" / f"task-{index}.json"
    await asyncio.to_thread(_write_readonly, task_file, task_bytes)
    env = context.env(
        context.home,
        FORGE_TASK_FILE=str(task_file),
        FORGE_MODEL=atom.model,
        FORGE_ATTEMPT_ID=spec.attempt_id,
        **context.passed_env(),
    )
    agent = agent_run(context, instructions) if atom.agent is not None else None
    result = await run_command(
        agent.argv if agent else atom.command,
        cwd=context.workspace,
        env={**env, **agent.env} if agent else env,
        timeout_s=atom.timeout_ms / 1000,
        clock=context.clock,
        output_cap=AGENT_OUTPUT_CAP if agent else COMMAND_OUTPUT_CAP,
        stdin=agent.prompt if agent else task_bytes,
        sandbox=context.recipe_sandbox(),
        bounds=context.recipe_bounds,
        tee=tee,
        watch=agent.meter.feed if agent else None,
    )
    context.meter.add(result)
    complete = not result.timed_out and not result.output_capped
    if agent is not None:
        report = agent.meter.report() if complete else None
        over = agent.meter.over_budget()
    else:
        report, over = parse_report(result.stdout) if complete else None, None
    return _Run(_invocation(context, index, resumed, report, result, over), report, result, over)


def _invocation(
    context: Context,
    index: int,
    resumed: str | None,
    report: HarnessReport | None,
    result: CommandResult,
    over_budget: str | None,
) -> Invocation:
    if (outcome := limited(result)) is None:
        outcome = (
            "timed-out" if result.timed_out else (report.outcome if report else "invalid-output")
        )
        if over_budget is not None:
            outcome = BUDGET_OUTCOME
    return Invocation(
        id=f"{context.spec.attempt_id}/coding-{index}",
        outcome=outcome,
        terminal_reason=report.terminal_reason if report else None,
        error=over_budget
        or (context.redactor.text(report.error) if report and report.error else None),
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        classification=None,
        resumed=resumed,
        elapsed_ms=result.elapsed_ms,
        usage=Usage(
            cost_usd=report.cost_usd if report else None,
            model=report.model if report else None,
            cost_basis=report.cost_basis if report else None,
        ),
    )


async def _wrote_out_of_scope(context: Context) -> bool:
    try:
        capture = await capture_tree(
            context.source,
            context.workspace,
            context.plan.base_commit,
            context.work / "scope-index",
            context.stat_index,
        )
    except GitError:
        return False
    return bool(capture.outside(context.plan.allowed_files))


def _formula_unchanged(context: Context) -> bool:
    path = context.spec.variant.spec.formula
    try:
        data = (context.spec.inputs_dir / path).read_bytes()
    except OSError:
        return False
    return hashlib.sha256(data).hexdigest() == context.spec.pins[path]


def _write_readonly(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o400)
