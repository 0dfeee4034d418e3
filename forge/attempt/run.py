"""One cohort attempt, as a plain coroutine: prepare, set up, code, capture, verify, clean up.

`run_attempt` returns the attempt record (the future `attempt.json`) and writes only evidence
files (`changes.diff`, `changes.json`, `verification.json`) under the attempt directory; the caller
writes `attempt.json`, so an attempt that never returned never looks done. Cancelled at any point,
it kills every process it started and removes its directories: a discarded attempt leaves nothing.

The seal: the attempt's trees (forge's source, the recipe's workspace and home, views, homes of
the views, task file) live in a private 0700 directory outside `--out` (`<attempt dir>/work` is a
link to it, for a person and for an executor that must tell a started attempt from a fresh one),
so nothing the recipe can reach names a path into `--out` or `--source`; the recipe and the checks
run in the bubblewrap sandbox (`sandbox`) where the platform allows, and the record says which
seal held. The recipe's sandbox shows its workspace, home and task file; each verification view's
own sandbox shows that view, a fresh home and the source's git folder (read-only), never the
recipe's trees: verification runs on a tree forge built from the base commit and the captured
change to the allowed files, and nothing else the recipe wrote reaches it.

The same coroutine runs in-process, in an attempt-runner worker, or on a Dask worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import shutil
import socket
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from msgspec import UNSET

from forge.attempt import sandbox
from forge.attempt.cohort import Task, Variant
from forge.attempt.command import MARKER_ENV, CommandResult, run_command
from forge.attempt.coordinates import Coordinate
from forge.attempt.egress.policy import public_policy
from forge.attempt.egress.proxy import EgressProxy, machine_addresses, proxy_env
from forge.attempt.errors import RunAborted
from forge.attempt.git import (
    Capture,
    add_worktree,
    cap_diff,
    capture_tree,
    list_files,
    make_attempt_source,
    make_workspace,
    restore_from,
    save_index,
    scoped_commit,
    unified_diff,
)
from forge.attempt.harness import (
    RESUME_INSTRUCTION,
    HarnessReport,
    is_transient,
    parse_report,
    served_model_mismatch,
    task_input,
)
from forge.attempt.limits import Bounds
from forge.attempt.plan import Command, is_test_file
from forge.attempt.record import (
    SCHEMA_VERSION,
    AttemptRecord,
    FailedCommand,
    Invocation,
    RegressionFailure,
    Seal,
    Tails,
    Usage,
    cost_basis,
)
from forge.attempt.redact import Redactor
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
from forge.attempt.sandbox import Sandbox, Trees
from forge.attempt.settings import LabSettings
from forge.attempt.verify import Observation, Step, ViewResult, run_view, view_steps
from forge.clock import SYSTEM_CLOCK, Clock
from forge.git import GitError
from forge.logs import get_logger
from forge.procs import find_by_environ, kill_processes

HARNESS_STDOUT_CAP = 1 << 20
"""1 MiB of harness stdout is far more than one JSON report; more is a flood (O-23)."""
MAX_RESUMES = 2
MAX_PROVIDER_CHECKS = 4
DEFAULT_PROVIDER_HOST = "api.anthropic.com"
WORK_LINK = "work"
"""`<attempt dir>/work`: a link to the attempt's private directory while it exists."""

log = get_logger(__name__)

Resolver = Callable[[str], Awaitable[bool]]
"""Does this provider host resolve? Injected so tests need no network."""


async def resolve_host(host: str) -> bool:
    try:
        await asyncio.get_running_loop().getaddrinfo(host, 443)
    except (socket.gaierror, UnicodeError):
        return False
    return True


@dataclass(frozen=True)
class AttemptSpec:
    """Everything one attempt needs; plain data, so it can travel to a worker process."""

    coordinate: Coordinate
    attempt_id: str
    attempt_dir: Path
    inputs_dir: Path
    pins: dict[str, str]
    task: Task
    variant: Variant
    source: Path
    origin: str | None
    caller_env: dict[str, str]
    settings: LabSettings
    keep_workspaces: bool = False
    parallel: int = 1
    hidden: tuple[str, ...] = ()
    """Paths the sandbox never shows, even inside an allowed folder: `--out`, `--source` and its
    local origins, the cohort's folder, forge's own directories (realpaths)."""


async def run_attempt(
    spec: AttemptSpec, *, clock: Clock = SYSTEM_CLOCK, resolver: Resolver = resolve_host
) -> AttemptRecord:
    """Run one attempt and return its record; on cancellation discard everything it made."""
    attempt = _Attempt(spec, clock, resolver)
    try:
        return await attempt.run()
    except BaseException:
        await asyncio.shield(attempt.close_egress())
        await asyncio.shield(asyncio.to_thread(attempt.discard))
        raise


class _Attempt:
    def __init__(self, spec: AttemptSpec, clock: Clock, resolver: Resolver) -> None:
        self.spec = spec
        self.clock = clock
        self.resolver = resolver
        self.plan = spec.task.plan
        self.atom = spec.variant.formula.coding
        self.work = Path("/nonexistent")
        """The private directory, made when the attempt starts."""
        self.made_work = False
        self.sandbox: Sandbox | None = None
        self.bounds = Bounds(spec.settings.limits)
        """The recipe's bounds; its disk written counts from its trees as its first command
        found them (set once they exist)."""
        self.limit: str | None = None
        """The first limit a command of this attempt reached."""
        self.bounded_by: str | None = None
        self.egress: EgressProxy | None = None
        """The attempt's one way out when its atom has the network (sandboxed only)."""
        self.redactor = Redactor(spec.caller_env)
        self.peak_rss = 0
        self.cpu_seconds = 0.0
        self.strays = 0
        self.notes: list[str] = []
        self.failed_output: list[FailedCommand] = []
        self.views: dict[str, Any] = {}
        self.record = AttemptRecord(
            schema_version=SCHEMA_VERSION,
            task=spec.coordinate.task,
            variant=spec.coordinate.variant,
            repetition=spec.coordinate.repetition,
            attempt_id=spec.attempt_id,
            formula_sha256=spec.variant.spec.formula_sha256,
            plan_sha256=spec.task.spec.plan_sha256,
            pinned_model=self.atom.model,
            started_at=iso_utc(clock.time()),
        )
        if spec.parallel > 1:
            self.record.parallel = spec.parallel

    @property
    def source(self) -> Path:
        return self.work / "source"

    @property
    def workspace(self) -> Path:
        return self.work / "workspace"

    @property
    def stat_index(self) -> Path:
        """The workspace's index as forge wrote it, before the recipe could touch it."""
        return self.work / "workspace.stat-index"

    async def run(self) -> AttemptRecord:
        started = self.clock.monotonic()
        record = self.record
        await asyncio.to_thread(self._make_work)
        self.bounds = Bounds(self.spec.settings.limits, (self.workspace, self.work / "home"))
        record.seal = await self._seal()
        try:
            await make_attempt_source(self.spec.source, self.plan.base_commit, self.source)
            # With the network, a public origin would hand the recipe the fix: no remote at all.
            origin = None if self.atom.network else self.spec.origin
            await make_workspace(self.source, self.plan.base_commit, self.workspace, origin)
            await save_index(self.workspace, self.stat_index)
        except (GitError, OSError) as error:
            record.outcome, record.error = "error", f"workspace preparation failed: {error}"
        else:
            await self._setup_and_code()
        capture = await self._capture()
        await self._verify(capture)
        await self._write_json("verification.json", {"schemaVersion": 1, "views": self.views})
        record.failed_check_output = self.failed_output
        record.peak_rss_bytes = self.peak_rss
        record.cpu_seconds = round(self.cpu_seconds, 3)
        record.stray_processes_killed = self.strays
        if self.limit is not None:
            self.notes.append(
                f"a command reached the {self.limit} limit and was killed "
                f"(bounded by {self.bounded_by})"
            )
        record.notes = self.notes
        if record.error is UNSET:
            record.error = None
        if record.invalid is UNSET:
            record.invalid = None
        if self.egress is not None:
            record.egress = self.egress.log.record()
        await self.close_egress()
        await self._cleanup()
        await self._hold("record")
        record.finished_at = iso_utc(self.clock.time())
        record.elapsed_ms = round((self.clock.monotonic() - started) * 1000)
        return record

    # -- the seal ----------------------------------------------------------------------------

    def _make_work(self) -> None:
        """The private directory (0700, outside `--out`) and the link to it from the attempt dir."""
        label = self.spec.attempt_id.replace("/", "_")
        self.work = Path(tempfile.mkdtemp(prefix=f"forge-attempt-{label}-"))
        self.made_work = True
        (self.work / "home").mkdir()
        (self.work / "task").mkdir()
        (self.spec.attempt_dir / WORK_LINK).symlink_to(self.work, target_is_directory=True)

    async def _seal(self) -> Seal:
        """Sandbox the recipe when bubblewrap runs here; say why not when it does not."""
        network = self.atom.network
        probe = await asyncio.to_thread(sandbox.probe, self.spec.caller_env)
        if probe.program is None:
            return Seal(sandbox=None, reason=probe.reason, network=True)
        # The private directories' parent is scratch: other attempts' trees live beside this one.
        launcher: list[str] = []
        if network:
            own = await asyncio.to_thread(machine_addresses)
            self.egress = EgressProxy(public_policy(own=own))
            await self.egress.start()
            launcher = self.egress.wrap([])
        self.sandbox = await asyncio.to_thread(
            Sandbox.for_attempt,
            probe.program,
            hidden=self.spec.hidden,
            mounts=self.atom.mounts,
            scratch=[str(self.work.parent)],
            tmpfs_bytes=self.spec.settings.limits.disk_bytes,
            launcher=launcher,
        )
        return Seal(sandbox=sandbox.NAME, reason=None, network=network)

    def _recipe_sandbox(self) -> Sandbox | None:
        """The recipe sees its workspace and home, and its task file; forge's source, its
        indexes and every view stay out of reach."""
        if self.sandbox is None:
            return None
        writable = [str(self.workspace), str(self.work / "home"), *self.spec.settings.sandbox_binds]
        trees = Trees(sandbox.realpaths(writable), sandbox.realpaths([str(self.work / "task")]))
        return self.sandbox.with_trees(trees)

    def _view_sandbox(self, view: Path, home: Path) -> Sandbox | None:
        """A verifying step sees its view and a fresh home, and reads the source's git folder
        (the view's git metadata) and the acceptance scripts; nothing of the recipe's."""
        if self.sandbox is None:
            return None
        writable = [str(view), str(home), *self.spec.settings.sandbox_binds]
        readonly = [str(self.source / ".git"), str(self.work / "acceptance")]
        trees = Trees(sandbox.realpaths(writable), sandbox.realpaths(readonly))
        return self.sandbox.with_trees(trees)

    async def close_egress(self) -> None:
        """The proxy closed with every port and tunnel through it (after the last step)."""
        if self.egress is not None:
            await self.egress.stop()
            self.egress = None

    def discard(self) -> None:
        """A cancelled attempt leaves nothing: neither its private trees nor its directory."""
        if self.made_work:
            shutil.rmtree(self.work, ignore_errors=True)
        shutil.rmtree(self.spec.attempt_dir, ignore_errors=True)

    # -- environment -------------------------------------------------------------------------

    def _env(self, home: Path, **extra: str) -> dict[str, str]:
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
            env.update(proxy_env())
        env[MARKER_ENV] = self.spec.attempt_id
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.update(extra)
        return env

    def _check_env(self, home: Path) -> dict[str, str]:
        """A verifying step's environment: its own fresh home, Python's user site off."""
        return self._env(home, PYTEST_ADDOPTS="-p no:cacheprovider", PYTHONNOUSERSITE="1")

    def _account(self, result: CommandResult) -> None:
        self.peak_rss = max(self.peak_rss, result.peak_rss_bytes)
        self.cpu_seconds += result.cpu_seconds
        self.strays += result.strays_killed
        self.limit = self.limit or result.limit
        self.bounded_by = self.bounded_by or result.bounded_by

    async def _hold(self, phase: str) -> None:
        """Test hook: park at `phase` until the named file exists (never set in production)."""
        for hold in self.spec.settings.holds:
            if hold.phase == phase and hold.coordinate == self.spec.coordinate.label:
                until = Path(hold.until)
                await asyncio.to_thread(Path(f"{hold.until}.waiting").write_text, phase)
                while not await asyncio.to_thread(until.exists):
                    await self.clock.sleep(0.05)

    def _forced(self, what: str) -> None:
        if what in self.spec.settings.forced_failures:
            raise OSError(f"forced {what} failure (test hook)")

    # -- setup and coding --------------------------------------------------------------------

    async def _setup_and_code(self) -> None:
        failure = await self._setup(
            self.workspace, self.work / "home", self._recipe_sandbox(), self.bounds
        )
        if failure is not None:
            command, result = failure
            self.record.outcome = _limited(result) or "setup-failed"
            self.record.error = f"setup {command.id} failed"
            self._failed("setup", command.id, "workspace", result)
            return
        await self._code()

    async def _setup(
        self, root: Path, home: Path, box: Sandbox | None, bounds: Bounds
    ) -> tuple[Command, CommandResult] | None:
        """Run the plan's setup in `root`, each from its dir; the first failure, if any."""
        for command in self.plan.setup:
            cwd = root if command.dir == "." else root / command.dir
            result = await self._run_check(command.argv, cwd, command.timeout_ms, home, box, bounds)
            if not result.ok:
                return command, result
        return None

    async def _run_check(
        self,
        argv: tuple[str, ...],
        cwd: Path,
        timeout_ms: int,
        home: Path,
        box: Sandbox | None,
        bounds: Bounds,
    ) -> CommandResult:
        result = await run_command(
            argv,
            cwd=cwd,
            env=self._check_env(home),
            timeout_s=timeout_ms / 1000,
            clock=self.clock,
            output_cap=HARNESS_STDOUT_CAP,
            sandbox=box,
            bounds=bounds,
        )
        self._account(result)
        return result

    async def _code(self) -> None:
        record = self.record
        invocations: list[Invocation] = []
        instructions: list[str] = []
        resumed: str | None = None
        provider_checks = 0
        harness_ms = 0
        outcome = "failed"
        timed_out = False
        while True:
            index = len(invocations) + 1
            invocation, report, result = await self._invoke(index, instructions, resumed)
            invocations.append(invocation)
            harness_ms += result.elapsed_ms
            limited = _limited(result)
            if limited is not None:
                outcome = limited
                break
            if result.timed_out:
                outcome = "timed-out"
                timed_out = True
                break
            if report is None:
                outcome = "failed"
                record.error = "invalid harness output"
                record.harness_output = Tails(
                    stdout_tail=self.redactor.tail(result.stdout),
                    stderr_tail=self.redactor.tail(result.stderr),
                )
                break
            outcome = report.outcome
            if outcome == "completed" and result.exit_code != 0:
                outcome = "failed"
                self.notes.append(f"the harness reported completed but exited {result.exit_code}")
            if served_model_mismatch(report, self.atom.model):
                record.invalid = "model-mismatch"
                record.served_model = report.model or "unknown"
                break
            if not is_transient(report):
                break
            invocation.classification = "transient-provider-error"
            invocation.message = report.error
            if await self._wrote_out_of_scope():
                self.notes.append(
                    "a transient provider error after an out-of-scope write is not resumed"
                )
                break
            resumes_used = len(invocations) - 1
            resolved = False
            if resumes_used < MAX_RESUMES:
                provider_checks, resolved = await self._await_provider(provider_checks)
            if not resolved:
                record.invalid = "provider-unavailable"
                record.transient_exhausted = [i.id for i in invocations]
                record.error = (
                    "transient-provider-error retries exhausted after "
                    f"{resumes_used} automatic resumes and {provider_checks} provider checks; "
                    f"last error: {invocation.message}"
                )
                break
            if not self._formula_unchanged():
                self.notes.append(
                    "the Formula input changed during a provider wait; the stage stops"
                )
                break
            resumed = (
                f"resumed after transient-provider-error ({resumes_used + 1} of {MAX_RESUMES})"
            )
            self.notes.append(resumed)
            instructions = [RESUME_INSTRUCTION]
        costed = [i.usage for i in invocations if i.usage.cost_usd is not None]
        record.outcome = outcome
        record.timed_out = timed_out
        record.invocations = invocations
        record.harness_ms = harness_ms
        record.cost_usd = round(sum(u.cost_usd or 0.0 for u in costed), 6) if costed else None
        record.cost_basis = cost_basis(u.cost_basis for u in costed)
        record.models = sorted({i.usage.model or "unknown" for i in invocations})
        record.resumed = invocations[-1].resumed

    async def _invoke(
        self, index: int, instructions: list[str], resumed: str | None
    ) -> tuple[Invocation, HarnessReport | None, CommandResult]:
        task_bytes = task_input(
            self.spec.task.issue, self.plan.allowed_files, self.atom.model, instructions
        )
        task_file = self.work / "task" / f"task-{index}.json"
        await asyncio.to_thread(_write_readonly, task_file, task_bytes)
        env = self._env(
            self.work / "home",
            FORGE_TASK_FILE=str(task_file),
            FORGE_MODEL=self.atom.model,
            FORGE_ATTEMPT_ID=self.spec.attempt_id,
        )
        result = await run_command(
            self.atom.command,
            cwd=self.workspace,
            env=env,
            timeout_s=self.atom.timeout_ms / 1000,
            clock=self.clock,
            output_cap=HARNESS_STDOUT_CAP,
            stdin=task_bytes,
            sandbox=self._recipe_sandbox(),
            bounds=self.bounds,
        )
        self._account(result)
        complete = not result.timed_out and not result.output_capped
        report = parse_report(result.stdout) if complete else None
        invocation = Invocation(
            id=f"{self.spec.attempt_id}/coding-{index}",
            outcome=_limited(result)
            or (
                "timed-out"
                if result.timed_out
                else (report.outcome if report else "invalid-output")
            ),
            terminal_reason=report.terminal_reason if report else None,
            error=self.redactor.text(report.error) if report and report.error else None,
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
        return invocation, report, result

    async def _wrote_out_of_scope(self) -> bool:
        try:
            capture = await capture_tree(
                self.source,
                self.workspace,
                self.plan.base_commit,
                self.work / "scope-index",
                self.stat_index,
            )
        except GitError:
            return False
        return bool(_violations(capture, self.plan.allowed_files))

    async def _await_provider(self, checks_done: int) -> tuple[int, bool]:
        """Wait and check the provider host: (checks used in this stage, whether it resolved)."""
        host = urlparse(self.spec.caller_env.get("ANTHROPIC_BASE_URL", "")).hostname
        host = host or DEFAULT_PROVIDER_HOST
        first, later = self.spec.settings.transient_waits_s
        checks = checks_done
        while checks < MAX_PROVIDER_CHECKS:
            await self.clock.sleep(first if checks == 0 else later)
            checks += 1
            if await self.resolver(host):
                return checks, True
            self.notes.append(
                f"provider host {host} did not resolve (check {checks} of {MAX_PROVIDER_CHECKS})"
            )
        return checks, False

    def _formula_unchanged(self) -> bool:
        path = self.spec.variant.spec.formula
        try:
            data = (self.spec.inputs_dir / path).read_bytes()
        except OSError:
            return False
        return hashlib.sha256(data).hexdigest() == self.spec.pins[path]

    # -- capture -----------------------------------------------------------------------------

    async def _capture(self) -> Capture | None:
        record = self.record
        await self._hold("capture")
        try:
            self._forced("capture")
            capture = await capture_tree(
                self.source,
                self.workspace,
                self.plan.base_commit,
                self.work / "capture-index",
                self.stat_index,
            )
            diff, truncated = cap_diff(
                await unified_diff(self.source, self.plan.base_commit, capture.commit)
            )
        except (GitError, OSError) as error:
            record.changes_error = str(error)
            return None
        await self._write_bytes("changes.diff", diff)
        await self._write_json(
            "changes.json",
            {"schemaVersion": 1, "paths": [{"path": p, "status": s} for s, p in capture.changes]},
        )
        violations = _violations(capture, self.plan.allowed_files)
        record.changed_files = [p for _, p in capture.changes]
        record.changes_diff_sha256 = hashlib.sha256(diff).hexdigest()
        record.changes_diff_bytes = len(diff)
        record.changes_diff_truncated = truncated
        record.changes_error = None
        record.scope_ok = not violations
        record.scope_violations = violations
        return capture

    # -- verification ------------------------------------------------------------------------

    async def _verify(self, capture: Capture | None) -> None:
        record = self.record
        record.verified = False
        record.hidden_acceptance = None
        record.required_checks_pass = None if not self._required_exist() else False
        record.correct = False
        record.correct_excluding_base_flakes = False
        if record.invalid:
            record.required_checks_pass = None
            return
        if capture is None or record.outcome not in ("completed", "no-change"):
            return
        await self._hold("verify")
        steps = view_steps(
            self.plan.setup,
            self.plan.checks,
            self.spec.variant.formula.checks,
            self.spec.settings.acceptance_timeout_ms,
        )
        restore = await self._restore_paths()
        try:
            commit = await scoped_commit(
                self.source,
                self.plan.base_commit,
                capture,
                self.plan.allowed_files,
                self.work / "scoped-index",
            )
        except GitError as error:
            record.error = f"verification could not build its tree: {error}"
            return
        candidate = await self._view("candidate", commit, steps, [], fail_fast=True)
        molecule = [candidate]
        if candidate.passed:
            molecule.append(await self._view("protected", commit, steps, restore, fail_fast=True))
        independent = await self._view("independent", commit, steps, restore, fail_fast=False)
        molecule_pass = all(v.passed for v in molecule) and len(molecule) == 2
        for view in molecule:
            for observation in view.observations:
                if not observation.passed:
                    phase = "setup" if observation.step.phase == "setup" else "check"
                    self._failed(phase, observation.step.id, view.name, observation.result)
        acceptance = independent.acceptance()
        hidden = acceptance.passed if acceptance is not None and acceptance.complete else None
        correct = (
            record.outcome == "completed"
            and record.scope_ok is True
            and molecule_pass
            and independent.passed
        )
        record.verified = True
        record.hidden_acceptance = hidden
        record.required_checks_pass = (
            len(molecule) == 2 and all(_required_observed_and_passed(v) for v in molecule)
            if self._required_exist()
            else None
        )
        record.correct = correct
        if hidden:
            await self._regressions(molecule, independent)
        record.correct_excluding_base_flakes = correct or self._excluding_base_flakes(
            molecule, independent
        )

    def _required_exist(self) -> bool:
        return bool(self.plan.checks or self.spec.variant.formula.checks)

    async def _restore_paths(self) -> list[str]:
        """Existing test files and originalCheckFiles, minus candidateTestFiles (O-22, V12)."""
        base_files = set(await list_files(self.source, self.plan.base_commit))
        exempt = set(self.plan.candidate_test_files)
        wanted = {p for p in base_files if is_test_file(p)} | (
            set(self.plan.original_check_files) & base_files
        )
        return sorted(wanted - exempt)

    async def _view(
        self,
        name: str,
        commit: str,
        steps: tuple[Step, ...],
        restore: list[str],
        *,
        fail_fast: bool,
    ) -> ViewResult:
        path = self.work / "views" / name
        home = await self._fresh_home(name)
        await add_worktree(self.source, path, commit)
        await restore_from(path, self.plan.base_commit, restore)
        result = await run_view(
            name,
            self.source,
            path,
            steps,
            fail_fast=fail_fast,
            env=self._check_env(home),
            clock=self.clock,
            acceptance_script=self._acceptance_script,
            sandbox=self._view_sandbox(path, home),
            bounds=Bounds(self.spec.settings.limits, (path, home)),
        )
        for observation in result.observations:
            self._account(observation.result)
        self.views[name] = result.to_json()
        return result

    async def _fresh_home(self, view: str) -> Path:
        """An empty home for one view's steps: nothing the recipe or another view left there."""
        home = self.work / "homes" / view
        await asyncio.to_thread(home.mkdir, parents=True)
        return home

    async def _acceptance_script(self, view: str) -> Path:
        """Verified acceptance bytes in a private 0500 file outside every view (V7)."""
        rel = self.spec.task.acceptance_file
        data = await asyncio.to_thread((self.spec.inputs_dir / rel).read_bytes)
        if hashlib.sha256(data).hexdigest() != self.spec.pins[rel]:
            raise RunAborted(f"input changed: {rel}")
        script = self.work / "acceptance" / f"{view}-acceptance"
        await asyncio.to_thread(_write_executable, script, data)
        return script

    # -- regressions -------------------------------------------------------------------------

    async def _regressions(self, molecule: list[ViewResult], independent: ViewResult) -> None:
        failed: dict[str, Step] = {}
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
        if not failed:
            return
        self.record.regression_failed_tests = sorted(failed)
        if truncated:
            self.record.regression_failed_tests_truncated = True
        await self._hold("rerun")
        self.record.regression_failures = await self._rerun_at_base(failed)

    async def _rerun_at_base(self, failed: dict[str, Step]) -> list[RegressionFailure]:
        ordered = sorted(failed, key=lambda n: package_and_test(failed[n].dir, n))
        entries = [unclassified_entry(*package_and_test(failed[n].dir, n)) for n in ordered]
        base_view = self.work / "views" / "base"
        home = await self._fresh_home("base")
        box = self._view_sandbox(base_view, home)
        bounds = Bounds(self.spec.settings.limits, (base_view, home))
        try:
            await add_worktree(self.source, base_view, self.plan.base_commit)
            if await self._setup(base_view, home, box, bounds) is not None:
                return entries
            for position, nodeid in enumerate(ordered[:MAX_RERUN_TESTS]):
                verdicts = []
                for _ in range(RUNS_PER_TEST):
                    argv = rerun_argv(failed[nodeid].argv, nodeid)
                    result = await self._run_check(
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

    def _excluding_base_flakes(self, molecule: list[ViewResult], independent: ViewResult) -> bool:
        """V11: judged from the independent run, and the Molecule's failures must agree."""
        flaky = {
            f"{f.package}::{f.test}"
            for f in self.record.regression_failures or []
            if f.flaky_at_base and not f.unclassified
        }
        if independent.error is not None or len(independent.observations) != len(independent.steps):
            return False
        if self.record.hidden_acceptance is not True:
            return False
        failures = [o for o in independent.observations if not o.passed]
        failures += [o for v in molecule for o in v.observations if not o.passed]
        return all(_only_flaky(o, flaky) for o in failures)

    # -- files and cleanup -------------------------------------------------------------------

    def _failed(self, phase: str, command_id: str, view: str, result: CommandResult) -> None:
        self.failed_output.append(
            FailedCommand(
                phase=phase,
                view=view,
                id=command_id,
                exit_code=result.exit_code,
                timed_out=result.timed_out,
                stdout_tail=self.redactor.tail(result.stdout),
                stderr_tail=self.redactor.tail(result.stderr),
                limit=UNSET if result.limit is None else result.limit,
            )
        )

    async def _write_bytes(self, name: str, data: bytes) -> None:
        await asyncio.to_thread((self.spec.attempt_dir / name).write_bytes, data)

    async def _write_json(self, name: str, document: dict[str, Any]) -> None:
        await self._write_bytes(name, (json.dumps(document, indent=2) + "\n").encode())

    async def _cleanup(self) -> None:
        if self.spec.keep_workspaces:
            return
        try:
            self._forced("cleanup")
            await asyncio.to_thread(shutil.rmtree, self.work)
            await asyncio.to_thread((self.spec.attempt_dir / WORK_LINK).unlink)
        except OSError as error:
            self.record.cleanup_error = str(error)


def _limited(result: CommandResult) -> str | None:
    """`resource-limit: <name>` when the command was killed at one of the attempt's limits."""
    return f"resource-limit: {result.limit}" if result.limit is not None else None


def _violations(capture: Capture, allowed: tuple[str, ...]) -> list[str]:
    permitted = set(allowed)
    return sorted(path for _, path in capture.changes if path not in permitted)


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


def _write_readonly(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o400)


def _write_executable(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    path.write_bytes(data)
    path.chmod(0o500)


def iso_utc(epoch: float) -> str:
    """`2026-11-29T20:00:00Z`: the form of every timestamp a Lab file records."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def discard_attempt_dir(attempt_dir: Path) -> None:
    """Remove an attempt whose process died: its private trees (the `work` link's target) and
    its directory under `--out`."""
    link = attempt_dir / WORK_LINK
    if link.is_symlink():
        shutil.rmtree(link.resolve(), ignore_errors=True)
    shutil.rmtree(attempt_dir, ignore_errors=True)


async def discard_lost_attempt(spec: AttemptSpec) -> None:
    """An attempt whose host died or will not answer: its marked processes killed, then its
    trees and directory removed (`discard_attempt_dir`)."""
    strays = await asyncio.to_thread(find_by_environ, MARKER_ENV, spec.attempt_id)
    await kill_processes(strays)
    await asyncio.to_thread(discard_attempt_dir, spec.attempt_dir)
