"""`forge evaluate --cohort`: preview the activation digest, or run an approved cohort.

Exit codes (acceptance table O-1): 0 preview, or a finished run whose every attempt is correct;
2 a finished run with an attempt not correct or invalid; 1 a refusal or an aborted run;
130/143 interrupted by SIGINT/SIGTERM. Flags are validated here rather than by argparse so a bad
flag exits 1, not argparse's 2 (which means "not correct" here).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import shlex
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from forge.attempt import sandbox
from forge.attempt.agent_cli import find_agent_cli
from forge.attempt.checkouts import SourceFacts, has_commit, inspect_source, list_files
from forge.attempt.cohort import Cohort, load_cohort
from forge.attempt.errors import LabRefusal, refusal
from forge.attempt.plan import MANIFESTS, unanchored_paths
from forge.attempt.run import iso_utc
from forge.attempt.settings import LabSettings, limits_from_config, settings_from_env
from forge.clock import SYSTEM_CLOCK
from forge.config import ConfigError, ForgeConfig, LabConfig, load_config, resolve_config_path
from forge.ipc.manager import WorkerManager
from forge.lab.activation import OutState, activate, check_out, read_activation, review_text
from forge.lab.cluster_tls import ClientTls, client_tls, scheduler_problems
from forge.lab.digest import activation_digest, canonical_out
from forge.lab.learn_requests import report_after_run
from forge.lab.progress import ProgressDisplay
from forge.lab.report import RunState
from forge.lab.runners import RunnerPool
from forge.lab.scheduler import CohortRun, Executor, RunConfig, exit_code
from forge.lab.seal import check_mounts, hidden_paths, review_lines
from forge.logs import configure

EXECUTORS = ("local", "dask")
LOCAL_RUNS = "Runs in: this process (--local)"
"""The preview's last seal line when nothing else decides where a run goes."""
SIGNAL_EXIT = {"SIGINT": 130, "SIGTERM": 143}


def _check_flags(args: argparse.Namespace) -> int:
    """The flags' problems, all at once; the parallelism when there are none."""
    if args.cohort is None:
        raise LabRefusal(
            "evaluate needs --cohort COHORT.json (or a subcommand: init, pin; see --help)"
        )
    problems = []
    if args.recheck:
        problems.append("cohort --recheck is not available yet")
    for flag in ("source", "out"):
        if getattr(args, flag) is None:
            problems.append(f"evaluate --cohort needs --{flag}")
    if args.executor not in EXECUTORS:
        problems.append(f"--executor must be local or dask, got {args.executor!r}")
    problems += scheduler_problems(args)
    text = args.parallel
    if not text.isdigit() or not 1 <= int(text) <= 4:
        problems.append(f"--parallel must be an integer from 1 to 4, got {text!r}")
    if problems:
        raise refusal(problems)
    return int(text)


def absolute(text: str) -> Path:
    """A path argument as given (relative, `~`-prefixed or absolute), made absolute once."""
    return Path(os.path.abspath(os.path.expanduser(text)))


async def _readiness(cohort: Cohort, source: SourceFacts) -> list[str]:
    """Every task whose base commit is missing or whose new files have no package (A15)."""
    problems = []
    for task in cohort.tasks:
        if not await has_commit(Path(source.toplevel), task.plan.base_commit):
            problems.append(
                f"{task.spec.plan}: baseCommit {task.plan.base_commit} "
                f"is not in --source {source.toplevel}"
            )
            continue
        base_files = set(await list_files(Path(source.toplevel), task.plan.base_commit))
        unanchored = unanchored_paths(task.plan.allowed_files, base_files)
        if unanchored:
            problems.append(
                f"{task.spec.plan}: allowedFiles {', '.join(unanchored)} are absent at base and "
                f"no ancestor directory holds a manifest ({', '.join(MANIFESTS)}); "
                "the plan is not ready"
            )
    return problems


@dataclass(frozen=True)
class Prepared:
    """An `evaluate` invocation checked and pinned: everything a preview or a run needs.

    Built by `prepare` in the CLI and, for a run handed over the socket, again in the supervisor
    (from the request's absolute paths and the caller's environment), so both refuse alike."""

    args: argparse.Namespace
    env: Mapping[str, str]
    parallel: int
    cohort: Cohort
    source: SourceFacts
    out: Path
    out_text: str
    hidden: tuple[str, ...]
    digest: str
    approve_argv: list[str]
    settings: LabSettings
    probe: sandbox.Probe
    cluster_tls: ClientTls | None
    """`--cluster-certs`: the client's certificate for a `tls://` Dask scheduler."""


async def prepare(args: argparse.Namespace, env: Mapping[str, str]) -> Prepared:
    """Check the flags and every input (all problems at once), and compute the digest."""
    parallel = _check_flags(args)
    cohort_path = absolute(args.cohort)
    cohort = load_cohort(cohort_path)
    source = await inspect_source(absolute(args.source))
    out_text = canonical_out(absolute(args.out))
    out = Path(out_text)
    cluster = None if args.cluster_certs is None else client_tls(absolute(args.cluster_certs))
    hidden = hidden_paths(cohort_dir=cohort_path.parent, out=out, source=source, env=env)
    if cluster is not None:
        # A recipe holding the client's key could submit work to the cluster like forge does.
        hidden = sandbox.realpaths([*hidden, str(cluster.folder)])
    problems = await _readiness(cohort, source)
    problems += check_mounts(cohort, hidden, env)
    if problems:
        raise refusal(problems)
    digest = activation_digest(cohort, source=source.toplevel, out=out_text)
    approve_argv = [
        "forge",
        "evaluate",
        "--cohort",
        args.cohort,
        "--source",
        args.source,
        "--out",
        args.out,
        "--approve",
        digest,
    ]
    return Prepared(
        args=args,
        env=env,
        parallel=parallel,
        cohort=cohort,
        source=source,
        out=out,
        out_text=out_text,
        hidden=hidden,
        digest=digest,
        approve_argv=approve_argv,
        settings=_settings(cohort, env),
        probe=await asyncio.to_thread(sandbox.probe, env),
        cluster_tls=cluster,
    )


def preview(prepared: Prepared, runs: str) -> str:
    """The review text; `runs` says where an approved run would go (`Runs in: ...`), which for
    `--executor dask` is the cluster, and whether it is one that anyone may submit work to."""
    if prepared.args.executor == "dask":
        runs = _cluster_line(prepared)
    seal_text = review_lines(
        prepared.cohort,
        prepared.probe,
        hidden=prepared.hidden,
        origin=prepared.source.origin,
        binds=prepared.settings.sandbox_binds,
        search_path=prepared.env.get("PATH", os.defpath),
        agent_cli=prepared.settings.agent_cli,
    )
    return review_text(
        prepared.cohort,
        source=prepared.source.toplevel,
        out=prepared.out_text,
        digest=prepared.digest,
        approve_argv=prepared.approve_argv,
        seal=[*seal_text, runs],
    )


def _cluster_line(prepared: Prepared) -> str:
    scheduler = prepared.args.scheduler
    if prepared.cluster_tls is None:
        return (
            f"Runs in: the Dask cluster at {scheduler}, WITHOUT TLS (--insecure-cluster): anyone "
            "who reaches its scheduler runs code on its workers, outside the sandbox; the report "
            "will say so"
        )
    return f"Runs in: the Dask cluster at {scheduler} (TLS, as {prepared.cluster_tls.cert})"


def check_approval(prepared: Prepared) -> None:
    """Refuse an `--approve` that is not this invocation's digest."""
    if prepared.args.approve != prepared.digest:
        raise LabRefusal(
            f"--approve {prepared.args.approve} does not match the activation digest "
            f"{prepared.digest}; review the cohort, then run: {shlex.join(prepared.approve_argv)}"
        )


def open_run(prepared: Prepared) -> tuple[RunConfig, OutState]:
    """Approve into `--out` (fresh: copy the inputs, write activation.json) or take up the run
    there (same digest), and the run's configuration."""
    args = prepared.args
    state = check_out(prepared.out, prepared.digest)
    if state is OutState.FRESH:
        approval = activate(
            prepared.cohort,
            out=prepared.out,
            digest=prepared.digest,
            source=prepared.source.toplevel,
            out_text=prepared.out_text,
            now=iso_utc(SYSTEM_CLOCK.time()),
        )
    else:
        approval = read_activation(prepared.out)
    config = RunConfig(
        cohort=prepared.cohort,
        out=prepared.out,
        source=Path(prepared.source.toplevel),
        origin=prepared.source.origin,
        approval=approval,
        caller_env=dict(prepared.env),
        settings=prepared.settings,
        parallel=prepared.parallel,
        keep_workspaces=args.keep_workspaces,
        runs_note={
            "resume": state is OutState.RESUME,
            "executor": args.executor,
            **({"insecureCluster": True} if args.insecure_cluster else {}),
        },
        hidden=prepared.hidden,
    )
    return config, state


def run_code(cohort_run: CohortRun, final: RunState) -> int:
    """The exit code of a finished run (O-1): 130/143 when a signal interrupted it."""
    if cohort_run.interrupted_by is not None:
        return SIGNAL_EXIT[cohort_run.interrupted_by]
    return exit_code(final, cohort_run.ordered_records())


def finish_lines(prepared: Prepared, status: str, abort_reason: str | None) -> None:
    """What every finished run prints, in this process or followed over the socket."""
    out = prepared.out
    sys.stdout.write(f"{status}: report in {out / 'report.md'}\n")
    lines = report_after_run(
        prepared.cohort, Path(prepared.args.cohort), out, iso_utc(SYSTEM_CLOCK.time())
    )
    for line in lines:
        sys.stderr.write(f"forge: {line}\n")
    if status == "aborted" and abort_reason:
        sys.stderr.write(f"forge: run aborted: {abort_reason}\n")


async def evaluate(args: argparse.Namespace, runs: str = LOCAL_RUNS) -> int:
    """`forge evaluate --cohort` in this process: the preview, or the run with its own runners."""
    prepared = await prepare(args, os.environ)
    if args.approve is None:
        sys.stdout.write(preview(prepared, runs))
        return 0
    check_approval(prepared)
    return await run_here(prepared)


async def run_here(prepared: Prepared) -> int:
    """Run an approved cohort in this process (`--local`, Dask, or no supervisor to take it)."""
    args = prepared.args
    if prepared.probe.program is None:
        sys.stderr.write(f"forge: recipe not sandboxed: {prepared.probe.reason}\n")
    check_out(prepared.out, prepared.digest)
    if args.executor == "dask":
        _require_distributed()
    dask_config = _lab_config() if args.executor == "dask" else None
    config, _ = open_run(prepared)
    configure(prepared.out / "lab.log", to_stderr=False, process="lab")
    if dask_config is not None:
        cohort_run, final = await _on_dask(
            config, args.scheduler, prepared.cluster_tls, dask_config
        )
    else:
        async with WorkerManager() as manager:
            pool = RunnerPool(manager, config.parallel, config.out)
            cohort_run, final = await _supervised(config, pool)
    finish_lines(prepared, final.status, final.abort_reason)
    return run_code(cohort_run, final)


def _display() -> ProgressDisplay:
    return ProgressDisplay(sys.stderr, SYSTEM_CLOCK, live=sys.stderr.isatty())


async def _supervised(
    config: RunConfig, executor: Executor, display: ProgressDisplay | None = None
) -> tuple[CohortRun, RunState]:
    """Run the cohort with SIGINT/SIGTERM routed to `interrupt` and progress on stderr."""
    display = display or _display()
    cohort_run = CohortRun(config, executor, SYSTEM_CLOCK, progress=display)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, cohort_run.interrupt, signal.Signals(signum).name)
    display.start()
    try:
        final = await cohort_run.run()
    finally:
        await display.stop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
    return cohort_run, final


def _require_distributed() -> None:
    if importlib.util.find_spec("distributed") is None:
        raise LabRefusal(
            "--executor dask needs Dask distributed: pip install 'forge-supervisor[cluster]'"
        )


def _settings(cohort: Cohort, env: Mapping[str, str]) -> LabSettings:
    """The run's settings: the environment's, forge.toml's bounds, and the Claude Code CLI
    when a variant is a `claude-code` atom (refused here when there is none)."""
    config = _config(env)
    agents = any(variant.formula.coding.agent for variant in cohort.variants)
    cli = find_agent_cli(config.agent.cli_path, env) if agents else None
    return replace(settings_from_env(env), limits=limits_from_config(config.lab), agent_cli=cli)


def _lab_config(env: Mapping[str, str] = os.environ) -> LabConfig:
    """forge.toml's [lab] (FORGE_CONFIG, else the default place); a bad file refuses the run."""
    return _config(env).lab


def _config(env: Mapping[str, str]) -> ForgeConfig:
    try:
        return load_config(resolve_config_path(None, env)).config
    except ConfigError as error:
        raise LabRefusal(str(error)) from None


async def _on_dask(
    config: RunConfig, scheduler: str, tls: ClientTls | None, lab: LabConfig
) -> tuple[CohortRun, RunState]:
    from distributed import Client

    from forge.lab.cluster import DaskExecutor, client_security

    try:
        client = await Client(scheduler, asynchronous=True, security=client_security(tls))
    except (OSError, TimeoutError) as error:
        raise LabRefusal(
            f"--scheduler {scheduler}: cannot reach the Dask scheduler ({error})"
        ) from None
    try:
        display = _display()
        executor = DaskExecutor(
            client,
            config.out,
            config.settings.lease_s[0],
            no_worker_s=lab.dask_no_worker_s,
            on_wait=display.note,
        )
        await executor.start()
        try:
            await executor.probe(config.source)
            return await _supervised(config, executor, display)
        finally:
            await executor.close()
    finally:
        await client.close()
