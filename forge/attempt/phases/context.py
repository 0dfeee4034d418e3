"""What every phase of one attempt shares: its spec, private directory, sandbox and meter.

The context is made once the attempt's private directory and seal exist (the workspace phase)
and never changes after; the one thing phases add to is the `Meter`, which sums what every
command used, in the order they ran, for the record's resource figures.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from msgspec import UNSET

from forge.attempt import sandbox
from forge.attempt.command import MARKER_ENV, CommandResult, run_command
from forge.attempt.egress.proxy import EgressProxy, proxy_env
from forge.attempt.formula import Atom
from forge.attempt.limits import Bounds
from forge.attempt.plan import Command, Plan
from forge.attempt.record import FailedCommand
from forge.attempt.redact import Redactor
from forge.attempt.sandbox import Sandbox, Trees
from forge.attempt.spec import AttemptSpec
from forge.clock import Clock

COMMAND_OUTPUT_CAP = 1 << 20
"""1 MiB of a command's stdout is far more than one JSON report; more is a flood (O-23)."""


@dataclass
class Meter:
    """What the attempt's commands used: the peak memory, CPU time, strays killed, and the first
    limit one of them reached (with what bounded it)."""

    peak_rss: int = 0
    cpu_seconds: float = 0.0
    strays: int = 0
    limit: str | None = None
    bounded_by: str | None = None

    def add(self, result: CommandResult) -> None:
        self.peak_rss = max(self.peak_rss, result.peak_rss_bytes)
        self.cpu_seconds += result.cpu_seconds
        self.strays += result.strays_killed
        self.limit = self.limit or result.limit
        self.bounded_by = self.bounded_by or result.bounded_by

    def limit_note(self) -> str | None:
        """The record's note when a command was killed at a limit."""
        if self.limit is None:
            return None
        return (
            f"a command reached the {self.limit} limit and was killed "
            f"(bounded by {self.bounded_by})"
        )


@dataclass(frozen=True)
class Context:
    """One attempt's ground: where its trees are, what seals them, how its commands run."""

    spec: AttemptSpec
    clock: Clock
    work: Path
    """The private directory (0700, outside `--out`)."""
    sandbox: Sandbox | None
    """The attempt's sandbox without trees (None: the layout seal alone)."""
    egress: EgressProxy | None
    """The attempt's one way out when its atom has the network (sandboxed only)."""
    meter: Meter
    redactor: Redactor
    recipe_bounds: Bounds
    """The recipe's bounds; its disk written counts from its trees as its first command found
    them."""

    @property
    def plan(self) -> Plan:
        return self.spec.task.plan

    @property
    def atom(self) -> Atom:
        return self.spec.variant.formula.coding

    @property
    def source(self) -> Path:
        """The attempt source: forge's own repository, never mounted writable in a sandbox."""
        return self.work / "source"

    @property
    def workspace(self) -> Path:
        return self.work / "workspace"

    @property
    def home(self) -> Path:
        return self.work / "home"

    @property
    def stat_index(self) -> Path:
        """The workspace's index as forge wrote it, before the recipe could touch it."""
        return self.work / "workspace.stat-index"

    # -- the sandboxes -----------------------------------------------------------------------

    def recipe_sandbox(self) -> Sandbox | None:
        """The recipe sees its workspace and home, and its task file (an agent atom: the CLI's
        file too, read-only); forge's source, its indexes and every view stay out of reach."""
        if self.sandbox is None:
            return None
        writable = [str(self.workspace), str(self.home), *self.spec.settings.sandbox_binds]
        readonly = [str(self.work / "task")]
        if self.atom.agent is not None and self.spec.settings.agent_cli is not None:
            readonly.append(self.spec.settings.agent_cli)
        trees = Trees(sandbox.realpaths(writable), sandbox.realpaths(readonly))
        return self.sandbox.with_trees(trees)

    def view_sandbox(self, view: Path, home: Path) -> Sandbox | None:
        """A verifying step sees its view and a fresh home, and reads the source's git folder
        (the view's git metadata) and the acceptance scripts; nothing of the recipe's."""
        if self.sandbox is None:
            return None
        writable = [str(view), str(home), *self.spec.settings.sandbox_binds]
        readonly = [str(self.source / ".git"), str(self.work / "acceptance")]
        trees = Trees(sandbox.realpaths(writable), sandbox.realpaths(readonly))
        return self.sandbox.with_trees(trees)

    # -- environment -------------------------------------------------------------------------

    def env(self, home: Path, **extra: str) -> dict[str, str]:
        """The scrubbed environment: PATH, LANG, TMPDIR, a private HOME, forge's variables.

        In the sandbox TMPDIR is its private /tmp: the caller's may be hidden or read-only there.
        """
        caller = self.spec.caller_env
        env = {"PATH": caller.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
        for name in ("LANG", "TMPDIR"):
            if name in caller:
                env[name] = caller[name]
        if self.sandbox is not None:
            env["TMPDIR"] = "/tmp"
        if self.egress is not None:
            env.update(proxy_env(routed=self.egress.policy))
        env[MARKER_ENV] = self.spec.attempt_id
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.update(extra)
        return env

    def passed_env(self) -> dict[str, str]:
        """The caller's variables the coding atom names (its API key): into the process's
        environment only, never a file; the redactor masks them in every output tail."""
        caller = self.spec.caller_env
        return {name: caller[name] for name in self.atom.pass_env if name in caller}

    def check_env(self, home: Path) -> dict[str, str]:
        """A verifying step's environment: its own fresh home, Python's user site off."""
        return self.env(home, PYTEST_ADDOPTS="-p no:cacheprovider", PYTHONNOUSERSITE="1")

    # -- commands ----------------------------------------------------------------------------

    async def run_check(
        self,
        argv: tuple[str, ...],
        cwd: Path,
        timeout_ms: int,
        home: Path,
        box: Sandbox | None,
        bounds: Bounds,
    ) -> CommandResult:
        """A setup command or check (not a verification view's step), metered."""
        result = await run_command(
            argv,
            cwd=cwd,
            env=self.check_env(home),
            timeout_s=timeout_ms / 1000,
            clock=self.clock,
            output_cap=COMMAND_OUTPUT_CAP,
            sandbox=box,
            bounds=bounds,
        )
        self.meter.add(result)
        return result

    async def setup(
        self, root: Path, home: Path, box: Sandbox | None, bounds: Bounds
    ) -> tuple[Command, CommandResult] | None:
        """Run the plan's setup in `root`, each from its dir; the first failure, if any."""
        for command in self.plan.setup:
            cwd = root if command.dir == "." else root / command.dir
            result = await self.run_check(command.argv, cwd, command.timeout_ms, home, box, bounds)
            if not result.ok:
                return command, result
        return None

    def failed(
        self, phase: str, command_id: str, view: str, result: CommandResult
    ) -> FailedCommand:
        """A failed command's entry in the record, its output's ends redacted."""
        return FailedCommand(
            phase=phase,
            view=view,
            id=command_id,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            stdout_tail=self.redactor.tail(result.stdout),
            stderr_tail=self.redactor.tail(result.stderr),
            limit=UNSET if result.limit is None else result.limit,
            elapsed_ms=result.elapsed_ms,
        )

    # -- evidence files and test hooks -------------------------------------------------------

    async def write_bytes(self, name: str, data: bytes) -> None:
        """An evidence file in the attempt directory."""
        await asyncio.to_thread((self.spec.attempt_dir / name).write_bytes, data)

    async def write_json(self, name: str, document: dict[str, Any]) -> None:
        await self.write_bytes(name, (json.dumps(document, indent=2) + "\n").encode())

    async def hold(self, phase: str) -> None:
        """Test hook: park at `phase` until the named file exists (never set in production)."""
        for hold in self.spec.settings.holds:
            if hold.phase == phase and hold.coordinate == self.spec.coordinate.label:
                until = Path(hold.until)
                await asyncio.to_thread(Path(f"{hold.until}.waiting").write_text, phase)
                while not await asyncio.to_thread(until.exists):
                    await self.clock.sleep(0.05)

    def forced(self, what: str) -> None:
        """Test hook: fail `what` when the settings force it."""
        if what in self.spec.settings.forced_failures:
            raise OSError(f"forced {what} failure (test hook)")


def limited(result: CommandResult) -> str | None:
    """`resource-limit: <name>` when the command was killed at one of the attempt's limits."""
    return f"resource-limit: {result.limit}" if result.limit is not None else None
