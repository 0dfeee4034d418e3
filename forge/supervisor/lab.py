"""The Lab in the supervisor: `lab_start`, `lab_stop` and the `lab` subject (our additions).

`lab_start` checks a run exactly as `forge evaluate --approve` does (`forge.lab.evaluate.prepare`,
same refusals), approves into `--out` or takes the run up there, and runs it with the Lab's own
scheduler on this supervisor's worker manager: its attempt runners (`lab-<run>-<n>`) are rows of
home's `workers` while the run lasts. `lab_stop` interrupts a run as SIGINT (or SIGTERM)
interrupts the CLI: in-flight attempts discarded, the run `aborted`, the approve command resumes
it. A stopping supervisor stops its runs the same way (SIGTERM) before its workers go; one
killed outright takes its runners along (parent-death signal) and each runner's deathwatch kills
its attempt's tree, so nothing is left and the next `forge evaluate` resumes.

The `lab` subject shows every run started here that runs, and the latest ended ones
(`forge.lab.live` keeps the rows, `ENDED_RUNS_KEPT` of the ended; `forge.lab.kept_runs` keeps
them in the state directory too, so a restarted supervisor lists them again); while a
connection holds it, each running attempt's process tree (its runner's session, walked by the
seats' walker worker once a second) is pushed as `lab_processes` when it moved (the seats' rule).
Each run's own records also go to `<out>/lab.log`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import msgspec
import structlog

from forge import paths
from forge.attempt.coordinates import coordinates
from forge.clock import epoch_ms
from forge.errors import UserError
from forge.ipc.manager import WorkerHandle, WorkerManager
from forge.lab import kept_runs
from forge.lab.evaluate import check_approval, open_run, prepare, run_code
from forge.lab.live import LiveRun, Update, runs_to_forget
from forge.lab.report_html import read_page
from forge.lab.runners import RunnerPool
from forge.lab.scheduler import CohortRun, ProgressEvent
from forge.logs import get_logger, tee
from forge.supervisor.processes import WALK_INTERVAL_S, WALK_TIMEOUT_S, moved
from forge.supervisor.service import WorkerService
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.core import Supervisor
from forge.wire import server
from forge.wire.lab import LAB, LabAnswer, LabReport, LabStart, LabStop, LabView, RunStatus
from forge.wire.seats import Subject
from forge.wire.server import JsonFrame
from forge.workers.walker.protocol import Walk

log = get_logger(__name__)

RUN_KEY = "lab_run"
"""The context variable naming the run a record belongs to (its `lab.log` takes those)."""


@dataclass
class _Run:
    live: LiveRun
    cohort_run: CohortRun | None
    """The scheduler while the run lasts; let go when it ends (it holds every record)."""
    out: Path
    task: asyncio.Task[None] | None = None
    runners: dict[str, WorkerHandle] = field(default_factory=dict)
    """Coordinate label -> the runner holding it now."""


class LabService(WorkerService):
    """`lab_start`, `lab_stop` and the `lab` subject; the runs' process trees while it is held."""

    name = "lab"

    def __init__(
        self,
        supervisor: Supervisor,
        manager: WorkerManager,
        walker: Callable[[], WorkerHandle],
        kept: Path,
    ) -> None:
        super().__init__(supervisor, manager)
        self._walker = walker
        self._kept = kept
        """The folder the runs' rows are kept in (`forge.lab.kept_runs`)."""
        self.runs: dict[str, _Run] = {
            live.row.run: _Run(live=live, cohort_run=None, out=Path(live.row.out))
            for live in kept_runs.load(kept)
        }
        self._held = asyncio.Event()
        self._walking: asyncio.Task[None] | None = None

    def install(self) -> None:
        s = self.supervisor
        s.register_verb(LabStart, self.lab_start)
        s.register_verb(LabStop, self.lab_stop)
        s.register_verb(LabReport, self.lab_report)
        s.register_subject(LAB, self.view)
        s.on_held(self._on_held)
        s.on_shutdown(self.stop)
        super().install()

    async def view(self) -> dict[str, Any]:
        snapshot: dict[str, Any] = msgspec.to_builtins(
            LabView(runs=[run.live.row for run in self.runs.values()])
        )
        return snapshot

    # Verbs.

    async def lab_start(self, connection: Connection, message: LabStart) -> None:
        try:
            answer = LabAnswer(ok=True, run=await self._start(message))
        except UserError as refusal:
            answer = LabAnswer(ok=False, why=str(refusal))
        _answer(connection, message.reply_to, answer)

    async def lab_stop(self, connection: Connection, message: LabStop) -> None:
        run = self.runs.get(message.run)
        if run is None or run.cohort_run is None or run.live.ended:
            answer = LabAnswer(ok=False, why=f"no run {message.run} is running here")
        else:
            log.info("lab_stop", run=message.run, signal=message.signal, peer=connection.peer)
            run.cohort_run.interrupt(message.signal)
            answer = LabAnswer(ok=True, run=message.run)
        _answer(connection, message.reply_to, answer)

    async def lab_report(self, connection: Connection, message: LabReport) -> None:
        """An ended run's report.html: the run is looked up by id among this supervisor's runs,
        and only its own `--out`'s page is read, so no client names a path."""
        run = self.runs.get(message.run)
        if run is None:
            answer = LabAnswer(ok=False, why=f"no run {message.run!r} here")
        elif not run.live.ended:
            answer = LabAnswer(ok=False, why=f"run {message.run} has not ended")
        else:
            try:
                html = await asyncio.to_thread(read_page, run.out)
                answer = LabAnswer(ok=True, run=message.run, html=html)
            except OSError as error:
                answer = LabAnswer(ok=False, why=f"run {message.run}: no report.html ({error})")
        _answer(connection, message.reply_to, answer)

    async def stop(self) -> None:
        """The supervisor stops: every run is interrupted as SIGTERM would, and waited for."""
        for run in self.runs.values():
            if run.cohort_run is not None and run.task is not None and not run.task.done():
                run.cohort_run.interrupt("SIGTERM")
        await asyncio.gather(
            *(run.task for run in self.runs.values() if run.task is not None),
            return_exceptions=True,
        )
        if self._walking is not None:
            self._walking.cancel()
            await asyncio.gather(self._walking, return_exceptions=True)

    # Runs.

    async def _start(self, message: LabStart) -> str:
        for name in ("cohort", "source", "out"):
            if not os.path.isabs(getattr(message, name)):
                raise UserError(f"lab_start: {name} must be an absolute path")
        args = argparse.Namespace(
            cohort=message.cohort,
            source=message.source,
            out=message.out,
            approve=message.approve,
            parallel=str(message.parallel),
            keep_workspaces=message.keep_workspaces,
            executor="local",
            scheduler=None,
            cluster_certs=None,
            insecure_cluster=False,
            recheck=False,
        )
        prepared = await prepare(args, message.env or dict(os.environ))
        check_approval(prepared)
        for other in self.runs.values():
            if other.out == prepared.out and not other.live.ended:
                raise UserError(
                    f"--out {prepared.out} is being run by run {other.live.row.run} of this "
                    "supervisor: wait for it or stop it"
                )
        config, _ = await asyncio.to_thread(open_run, prepared)
        run_id = uuid.uuid4().hex[:12]
        live = LiveRun.begin(
            run=run_id,
            cohort=message.cohort,
            source=prepared.source.toplevel,
            out=prepared.out_text,
            hypothesis=prepared.cohort.spec.hypothesis,
            digest=prepared.digest,
            parallel=prepared.parallel,
            variants=[v.name for v in prepared.cohort.spec.variants],
            order=coordinates(prepared.cohort.spec),
            now_ms=epoch_ms(self.supervisor.clock),
        )
        pool = RunnerPool(
            self.manager,
            config.parallel,
            config.out,
            prefix=f"lab-{run_id}-",
            on_assign=lambda label, handle: self._assign(run_id, label, handle),
        )
        cohort_run = CohortRun(
            config,
            pool,
            self.supervisor.clock,
            progress=lambda event: self._progress(run_id, event),
        )
        run = _Run(live=live, cohort_run=cohort_run, out=prepared.out)
        self.runs[run_id] = run
        log.info("lab_run_started", run=run_id, out=prepared.out_text, parallel=config.parallel)
        self._push([live.whole()])
        await asyncio.to_thread(kept_runs.save, self._kept, live.row)
        run.task = asyncio.create_task(self._run(run, cohort_run, pool), name=f"lab-{run_id}")
        return run_id

    async def _run(self, run: _Run, cohort_run: CohortRun, pool: RunnerPool) -> None:
        run_id = run.live.row.run
        structlog.contextvars.bind_contextvars(**{RUN_KEY: run_id})
        status: RunStatus = "aborted"
        stop_reason: str | None = None
        abort_reason: str | None = None
        code = 1
        try:
            with tee(run.out / "lab.log", RUN_KEY, run_id):
                final = await cohort_run.run()
            status = _status(final.status)
            stop_reason, abort_reason = final.stop_reason, final.abort_reason
            code = run_code(cohort_run, final)
        except UserError as refusal:
            abort_reason = str(refusal)
        except Exception as failure:
            log.exception("lab_run_failed", run=run_id)
            abort_reason = f"the supervisor failed to run it ({type(failure).__name__})"
        finally:
            await pool.close()
        log.info("lab_run_ended", run=run_id, status=status, exit_code=code)
        self._push(run.live.end(status, stop_reason, abort_reason, code))
        run.cohort_run = None
        run.runners.clear()
        await asyncio.to_thread(kept_runs.save, self._kept, run.live.row)
        for old in runs_to_forget([kept.live.row for kept in self.runs.values()]):
            del self.runs[old]
            await asyncio.to_thread(kept_runs.forget, self._kept, old)

    def _progress(self, run_id: str, event: ProgressEvent) -> None:
        live = self.runs[run_id].live
        self._push(live.apply(event, epoch_ms(self.supervisor.clock)))

    def _assign(self, run_id: str, label: str, handle: WorkerHandle | None) -> None:
        run = self.runs[run_id]
        if handle is None:
            run.runners.pop(label, None)
        else:
            run.runners[label] = handle
            self._held.set()
        self._push(run.live.assign(label, None if handle is None else handle.row.name))

    def _push(self, updates: list[Update]) -> None:
        holders = self.supervisor.subscribers(LAB)
        for variant, body in updates:
            frame = JsonFrame.encode(server.Update.of(variant, body, seq=None))
            for connection in holders:
                connection.send_frame(frame)

    # Process trees of the running attempts, walked while the subject is held.

    def _on_held(self, subject: Subject, held: bool) -> None:
        if subject != LAB:
            return
        if held:
            self._held.set()
            if self._walking is None:
                self._walking = asyncio.get_running_loop().create_task(self._walk_loop())
        else:
            self._held.clear()

    async def _walk_loop(self) -> None:
        clock = self.supervisor.clock
        while True:
            await self._held.wait()
            started = clock.monotonic()
            try:
                await self.walk_running()
            except Exception:  # one bad tick must not end the walks of the run
                log.exception("lab_processes_tick_failed")
            await clock.sleep(max(started + WALK_INTERVAL_S - clock.monotonic(), 0.0))

    async def walk_running(self) -> None:
        """One tick: walk each running attempt's runner, push the trees that moved."""
        if not self.supervisor.subscribers(LAB):
            self._held.clear()
            return
        walked = [
            (run, label, handle.pid)
            for run in self.runs.values()
            for label, handle in list(run.runners.items())
            if handle.pid is not None
        ]
        if not walked:
            return
        answer = await self.ask_or_log(
            self._walker(),
            Walk(sessions=[[pid] for _, _, pid in walked]),
            "lab_processes_walk_failed",
            within=WALK_TIMEOUT_S,
        )
        if answer is None:
            return
        for (run, label, _), rows in zip(walked, answer.trees, strict=True):
            if run.runners.get(label) is None:
                continue
            before = next(a.processes for a in run.live.row.attempts if a.label == label)
            current = [dict(row) for row in rows]
            if moved(before, current):
                self._push(run.live.processes(label, current))


def _status(text: str) -> RunStatus:
    """The scheduler's final status (`complete`, `stopped` or `aborted`) as the wire types it."""
    return cast(RunStatus, text)


def _answer(connection: Connection, reply_to: Any, answer: LabAnswer) -> None:
    if reply_to is not None:
        connection.send(server.Reply(reply_to=reply_to, body=msgspec.to_builtins(answer)))


def install(
    supervisor: Supervisor,
    manager: WorkerManager,
    walker: Callable[[], WorkerHandle],
    kept: Path | None = None,
) -> LabService:
    """Serve the Lab's verbs and subject on `supervisor`, its runners started by `manager`; the
    runs' rows are kept in `kept` (the state directory's `lab-runs` unless given)."""
    kept = kept if kept is not None else paths.state_dir() / kept_runs.FOLDER
    service = LabService(supervisor, manager, walker, kept)
    service.install()
    return service
