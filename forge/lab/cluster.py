"""`--executor dask`: attempts on an existing Dask cluster (extra `forge-supervisor[cluster]`).

The attempt code is the same coroutine the local runners await. Dask only places it: the client
submits in coordinate order (`priority=-index`, `retries=0`, `pure=False`), the scheduler keeps at
most N in flight, and the client alone writes `attempt.json` and the report.

`Future.cancel()` does not stop a task that is already running (its process tree would live on), so
every attempt watches two run-scoped objects on the cluster and cancels itself, killing its own
process groups and discarding its directory: an `Event` the client sets when the run aborts (SIGINT,
an abort error), and a lease `Variable` the client refreshes; a lease gone stale means the client
died. Staleness is measured on the worker's own monotonic clock (how long since the value last
changed), so clock skew between client and worker machines cannot fake or hide it. A worker lost
mid-attempt aborts the run: its attempt dies with it on the worker's machine (`deathwatch`), Dask
would re-run the task elsewhere, so the re-run refuses to start (its attempt directory already
holds a workspace), and `KilledWorker` after repeated losses does the same. A cluster with no
worker left holds tasks forever, so the client counts the scheduler's workers and aborts the run
once tasks have waited `[lab] dask_no_worker_s` without one (`noworker`).

The client connects with its certificate over TLS (`cluster_tls`), or, with `--insecure-cluster`,
with Dask's own configuration. A worker holds a key of the cluster's CA, which would let a recipe
submit work as forge does, so the folders of the worker's TLS files join the paths the attempt's
sandbox never mounts.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from distributed import Client, Event, Variable, get_worker
from distributed.client import Future, FutureCancelledError
from distributed.scheduler import KilledWorker
from distributed.security import Security

from forge import __version__, eventloop
from forge.attempt import sandbox
from forge.attempt.command import MARKER_ENV
from forge.attempt.deathwatch import deathwatch
from forge.attempt.errors import LabRefusal, RunAborted
from forge.attempt.handoff import Handoff
from forge.attempt.layout import INPUTS_DIR
from forge.attempt.record import AttemptRecord
from forge.attempt.run import discard_lost_attempt, run_attempt
from forge.attempt.spec import AttemptSpec
from forge.clock import SYSTEM_CLOCK, Clock
from forge.lab.activation import MANIFEST_FILE
from forge.lab.cluster_tls import ClientTls
from forge.lab.noworker import NoWorkerWait, waiting_note

WATCH_S = 0.5
"""How often a running attempt looks at the run's cancel event and lease."""
WORKERS_EVERY_S = 1.0
"""How often the client asks the scheduler how many workers it has."""
PROBE_LABEL = "the path probe"
TLS_FILES = (
    *("tls_ca_file", "tls_scheduler_cert", "tls_scheduler_key", "tls_worker_cert"),
    *("tls_worker_key", "tls_client_cert", "tls_client_key"),
)
"""The `Security` fields that name files; a value holding a newline is a PEM in memory."""


def client_security(tls: ClientTls | None) -> Security | None:
    """forge's side of the cluster's TLS; None (Dask's configuration) with --insecure-cluster."""
    if tls is None:
        return None
    return Security(
        require_encryption=True,
        tls_ca_file=str(tls.ca),
        tls_client_cert=str(tls.cert),
        tls_client_key=str(tls.key),
    )


def tls_folders(security: Security) -> list[str]:
    """The folders of the TLS files `security` names (its PEMs held in memory name none)."""
    values = [getattr(security, name) for name in TLS_FILES]
    return [
        os.path.dirname(os.path.abspath(value))
        for value in values
        if isinstance(value, str) and value and "\n" not in value
    ]


class DaskExecutor:
    """An `Executor` that runs each attempt as one Dask task."""

    def __init__(
        self,
        client: Client,
        out: Path,
        lease_refresh_s: float,
        *,
        no_worker_s: float,
        clock: Clock = SYSTEM_CLOCK,
        on_wait: Callable[[str | None], None] | None = None,
    ) -> None:
        self.client = client
        self.address = str(self._scheduler.address)
        self.out = out
        self.lease_refresh_s = lease_refresh_s
        self.clock = clock
        self.on_wait = on_wait
        """Told the progress line's note while tasks wait for a worker, None once they do not."""
        self.run_id = uuid.uuid4().hex
        self.cancel_event = Event(f"forge-lab-cancel-{self.run_id}", client=client)
        self.lease = Variable(f"forge-lab-lease-{self.run_id}", client=client)
        self.no_worker = NoWorkerWait(no_worker_s)
        self.workers: int | None = None
        """The scheduler's running workers at the last look (None before the first)."""
        self.submitted: dict[str, tuple[Future[Any], str]] = {}
        """Tasks not finished yet: key -> (future, what it is: a coordinate or the probe)."""
        self.lost: str | None = None
        """Why the cluster was given up (it had no worker for too long), once it was."""
        self._background: list[asyncio.Task[None]] = []

    @property
    def _scheduler(self) -> Any:
        """The client's connection to its scheduler (set once the client started)."""
        assert self.client.scheduler is not None
        return self.client.scheduler

    async def start(self) -> None:
        await self.lease.set(self.clock.time())
        self._background = [
            asyncio.create_task(self._refresh_lease()),
            asyncio.create_task(self._watch_workers()),
        ]

    async def close(self) -> None:
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    async def probe(self, source: Path) -> None:
        """Refuse before any attempt if a worker cannot see the run's paths or runs other code."""
        paths = [str(self.out / INPUTS_DIR / MANIFEST_FILE), str(source)]
        future: Future[Any] = self.client.submit(_probe, paths, pure=False, retries=0)
        try:
            seen: dict[str, Any] = await self._result(future, PROBE_LABEL)
        except RunAborted as error:
            raise LabRefusal(f"--executor dask: {self.lost or error.reason}") from None
        if seen["missing"]:
            raise LabRefusal(
                "--executor dask: a worker cannot see "
                + ", ".join(seen["missing"])
                + "; workers must see --out, --source and the inputs at the same paths"
            )
        if seen["version"] != __version__:
            raise LabRefusal(
                f"--executor dask: a worker runs forge {seen['version']}, this client {__version__}"
            )

    async def __call__(self, spec: AttemptSpec) -> AttemptRecord:
        future: Future[Any] = self.client.submit(
            run_on_worker,
            Handoff.of(spec, self.out),
            self.run_id,
            key=f"forge-lab-{spec.attempt_id}",
            priority=-spec.coordinate.index,
            retries=0,
            pure=False,
        )
        record: AttemptRecord = await self._result(future, spec.coordinate.label)
        return record

    async def _result(self, future: Future[Any], label: str) -> Any:
        """The task's result; RunAborted if the cluster lost it or had no worker for too long."""
        self.submitted[str(future.key)] = (future, label)
        try:
            return await future
        except asyncio.CancelledError:
            # The run is aborting: tell every attempt, then wait until this one discarded itself.
            await _despite_cancellation(self._abandon(future))
            raise
        except KilledWorker as lost:
            raise RunAborted(f"executor lost: {lost}") from None
        except FutureCancelledError as cancelled:
            if self.lost is not None:
                raise RunAborted(
                    f"executor lost: {self.lost}; start a worker and run the same command to resume"
                ) from None
            raise RunAborted(self._cancelled(cancelled)) from None
        finally:
            self.submitted.pop(str(future.key), None)

    def _cancelled(self, cancelled: FutureCancelledError) -> str:
        """Why Dask cancelled a task forge did not cancel: the client lost its scheduler."""
        address = self.address
        if cancelled.reason == "scheduler-connection-lost":
            return f"executor lost: the connection to the Dask scheduler {address} was lost"
        return f"executor lost: the Dask scheduler {address} cancelled {cancelled.key}"

    async def _abandon(self, future: Future[Any]) -> None:
        await self.cancel_event.set()
        if self.workers == 0:
            # Nothing runs without a worker: there is nothing to wait for.
            await self.client.cancel([future], reason="forge run aborted")
            return
        with contextlib.suppress(Exception):
            await future

    async def _watch_workers(self) -> None:
        """Give the cluster up once tasks have waited `no_worker_s` with no worker to run them."""
        while True:
            try:
                self.workers = len(await self._scheduler.ncores_running())
            except OSError:
                self.workers = 0
            waited = self.no_worker.observe(
                self.clock.monotonic(), workers=self.workers, waiting=len(self.submitted)
            )
            if self.on_wait is not None:
                self.on_wait(None if waited is None else waiting_note(waited))
            if self.no_worker.expired(waited):
                await self._give_up()
                if self.on_wait is not None:
                    self.on_wait(None)
                return
            await self.clock.sleep(WORKERS_EVERY_S)

    async def _give_up(self) -> None:
        labels = [label for _, label in self.submitted.values()]
        self.lost = (
            f"the Dask scheduler {self.address} has had no worker for "
            f"{self.no_worker.bound_s:g} s while {', '.join(labels)} waited"
        )
        # A worker joining now must not start what this run no longer waits for.
        await self.cancel_event.set()
        await self.client.cancel(
            [future for future, _ in self.submitted.values()], reason="no Dask worker"
        )

    async def _refresh_lease(self) -> None:
        while True:
            await self.clock.sleep(self.lease_refresh_s)
            await self.lease.set(self.clock.time())


async def _despite_cancellation(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run `coroutine` to its end even if the caller is cancelled again meanwhile."""
    task = asyncio.ensure_future(coroutine)
    while not task.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)


def _probe(paths: list[str]) -> dict[str, Any]:
    # os.path.exists, not Path.exists: a directory this worker may not enter is unseen too, where
    # Path.exists (3.11) raises PermissionError and the user would get a traceback.
    return {"missing": [p for p in paths if not os.path.exists(p)], "version": __version__}


def run_on_worker(handoff: Handoff, run_id: str) -> AttemptRecord:
    """The Dask task: run one attempt in this worker thread, cancelling it when the run aborts."""
    secrets = tls_folders(get_worker().security)
    return eventloop.run_beside_others(_watched(handoff, run_id, secrets))


async def _watched(handoff: Handoff, run_id: str, secrets: list[str]) -> AttemptRecord:
    spec = handoff.spec()
    spec = dataclasses.replace(spec, hidden=sandbox.realpaths([*spec.hidden, *secrets]))
    if await asyncio.to_thread((spec.attempt_dir / "work").exists):
        # Dask re-runs a task whose worker died; an attempt is never silently retried.
        await discard_lost_attempt(spec)
        raise RunAborted(f"executor lost: the worker running {spec.coordinate.label} died")
    cancel_event = Event(f"forge-lab-cancel-{run_id}")
    lease = Variable(f"forge-lab-lease-{run_id}")
    stale_s = spec.settings.lease_s[1]
    lease_value: object = None
    lease_changed = SYSTEM_CLOCK.monotonic()
    async with deathwatch(MARKER_ENV, spec.attempt_id):
        attempt = asyncio.create_task(run_attempt(spec))
        while not attempt.done():
            await asyncio.wait({attempt}, timeout=WATCH_S)
            if attempt.done():
                break
            cancelled, value = await asyncio.to_thread(_look, cancel_event, lease)
            now = SYSTEM_CLOCK.monotonic()
            if value is not None and value != lease_value:
                lease_value, lease_changed = value, now
            if cancelled or now - lease_changed > stale_s:
                attempt.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await attempt
                raise RunAborted(f"attempt {spec.attempt_id} cancelled and discarded")
        return attempt.result()


def _look(cancel_event: Event, lease: Variable) -> tuple[bool, object]:
    """Whether the run was cancelled, and the lease's current value (None when unreadable)."""
    if cancel_event.is_set():
        return True, None
    try:
        return False, lease.get(timeout=WATCH_S)
    except TimeoutError:
        return False, None
