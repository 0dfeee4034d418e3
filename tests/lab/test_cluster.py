"""`--executor dask` against a real LocalCluster of 2 worker processes (rows X1-X5)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from distributed import Client, LocalCluster

from .kit import HELD_MS, Kit, marker_processes, normalised, wait_for, wait_until

ANY_HTTP_PORT = {"dashboard_address": ":0"}
"""The scheduler serves HTTP even without a dashboard, by default on 8787: with that port taken
(another run on the machine) it warns, and warnings are errors here."""


WORKERS = 2


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    with LocalCluster(
        n_workers=WORKERS, processes=True, threads_per_worker=1, **ANY_HTTP_PORT
    ) as cluster:
        yield cluster.scheduler_address


@pytest.fixture
def scheduler(cluster: str) -> str:
    """The cluster's address once both workers are up: a test that killed one leaves its nanny
    restarting it, which on a loaded machine can outlast a next test's attempt timeout."""
    with Client(cluster) as client:
        client.wait_for_workers(WORKERS, timeout=120)
    return cluster


def test_dask_run_reports_what_a_local_run_reports(kit: Kit, scheduler: str) -> None:
    kit.cohort(
        a=kit.formula("a"),
        b=kit.formula("b", knobs={"FAKE_ACTION": "none", "FAKE_OUTCOME": "no-change"}),
        tasks={"t1": kit.plan("t1"), "t2": kit.plan("t2")},
    )
    digest = kit.digest()
    on_dask = kit.cli(
        "--approve", digest, "--executor", "dask", "--scheduler", scheduler, "--parallel", "2"
    )
    assert on_dask.returncode == 2, on_dask.stderr
    local_out = kit.root / "local"
    local = kit.cli("--approve", kit.digest(out=local_out), "--parallel", "2", out=local_out)
    assert local.returncode == 2, local.stderr
    dask_report, local_report = (
        normalised(kit.report()),
        normalised(json.loads((local_out / "report.json").read_text())),
    )
    assert dask_report["attempts"] == local_report["attempts"]
    assert dask_report["variants"] == local_report["variants"]
    assert json.loads((kit.out / "runs.jsonl").read_text().splitlines()[0])["executor"] == "dask"


def test_sigint_cancels_running_attempts_on_the_cluster(kit: Kit, scheduler: str) -> None:
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_GATE": "1", "FAKE_STRAY": "1"}, timeout_ms=HELD_MS),
        b=kit.formula("b", knobs={"FAKE_GATE": "1"}, model="m2", timeout_ms=HELD_MS),
        tasks={"t1": kit.plan("t1")},
    )
    process = kit.start(
        "--approve", kit.digest(), "--executor", "dask", "--scheduler", scheduler, "--parallel", "2"
    )
    wait_for(kit.ctl, "started-*", 2, process)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=90)
    assert process.returncode == 130, stderr
    assert marker_processes(str(kit.ctl)) == []
    assert not list((kit.out / "attempts").rglob("attempt.json"))
    assert kit.report()["status"] == "aborted"


def test_an_unreachable_scheduler_is_refused(kit: Kit) -> None:
    kit.cohort(a=kit.formula("a"), b=kit.formula("b", model="m2"), tasks={"t1": kit.plan("t1")})
    result = kit.cli(
        *("--approve", kit.digest(), "--executor", "dask", "--scheduler", "tcp://127.0.0.1:9"),
        env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"},
    )
    assert result.returncode == 1
    assert "cannot reach the Dask scheduler" in result.stderr
    assert kit.probes() == []


def test_a_lost_worker_aborts_instead_of_retrying(kit: Kit, scheduler: str) -> None:
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_GATE": "1"}, timeout_ms=HELD_MS),
        b=kit.formula("b", model="m2"),
        tasks={"t1": kit.plan("t1")},
    )
    process = kit.start("--approve", kit.digest(), "--executor", "dask", "--scheduler", scheduler)
    wait_for(kit.ctl, "started-*", 1, process)
    (harness,) = kit.harnesses()
    worker = next(
        p
        for p in harness.parents()
        if "distributed" in " ".join(p.cmdline()) or "multiprocessing" in " ".join(p.cmdline())
    )
    worker.kill()
    _, stderr = process.communicate(timeout=90)
    assert process.returncode == 1, stderr
    assert "executor lost" in stderr
    assert kit.report()["status"] == "aborted"
    assert not (kit.out / "attempts" / "t1" / "a" / "rep-1").exists()
    assert marker_processes(str(kit.ctl)) == []


def test_attempts_stop_on_a_stale_lease_when_the_client_dies(kit: Kit, scheduler: str) -> None:
    """X4: SIGKILL the CLI mid-run; its attempts on the cluster notice the lease going stale
    (scaled from 5 s / 30 s down to 0.2 s / 3 s), kill their process trees and discard their
    directories. The harnesses are children of the Dask worker, not of the dead CLI."""
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_GATE": "1"}, timeout_ms=HELD_MS),
        b=kit.formula("b", knobs={"FAKE_GATE": "1"}, model="m2", timeout_ms=HELD_MS),
        tasks={"t1": kit.plan("t1")},
    )
    process = kit.start(
        *("--approve", kit.digest(), "--executor", "dask", "--scheduler", scheduler),
        *("--parallel", "2"),
        env={"FORGE_LAB_LEASE_MS": "200,3000"},
    )
    wait_for(kit.ctl, "started-*", 2, process)
    harnesses = kit.harnesses()
    assert len(harnesses) == 2
    assert all(process.pid not in {p.pid for p in h.parents()} for h in harnesses)
    process.kill()
    process.communicate()
    attempts = kit.out / "attempts" / "t1"
    wait_until(
        lambda: not marker_processes(str(kit.ctl)) and not list(attempts.glob("*/rep-1")),
        "the attempts to notice the stale lease and discard themselves",
    )
    assert not list(kit.out.rglob("attempt.json"))


BLINDFOLDS = {
    "own-mount-namespace": (
        *("unshare", "--mount", "--propagation", "private", "sh", "-c"),
        'mount -t tmpfs forge-blind "$0" && exec "$@"',
    ),
    "another-user": ("sh", "-c", 'exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"'),
}
"""Two ways a worker misses this test's directory (fixture repo, cohort, --out): it runs on
another "machine" (a tmpfs hides the directory in its own mount namespace), or as a user who may
not enter it (pytest's directories are 0700)."""


@pytest.fixture(params=sorted(BLINDFOLDS))
def blind_worker_scheduler(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A LocalCluster scheduler whose only worker is a `dask worker` that cannot see tmp_path."""
    with LocalCluster(n_workers=0, processes=True, **ANY_HTTP_PORT) as cluster:
        address = cluster.scheduler_address
        worker = subprocess.Popen(
            [
                *BLINDFOLDS[request.param],
                str(tmp_path),
                *(sys.executable, "-m", "distributed.cli.dask_worker", address),
                *("--no-nanny", "--nthreads", "1", "--no-dashboard"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            with Client(address) as client:
                client.wait_for_workers(1, timeout=60)
            yield address
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=60)


def test_a_worker_that_cannot_see_the_run_paths_is_refused_before_any_attempt(
    kit: Kit, blind_worker_scheduler: str
) -> None:
    """X3: the probe task runs on the worker first; unseen paths refuse the run (exit 1)."""
    kit.cohort(a=kit.formula("a"), b=kit.formula("b", model="m2"), tasks={"t1": kit.plan("t1")})
    result = kit.cli(
        *("--approve", kit.digest(), "--executor", "dask", "--scheduler", blind_worker_scheduler)
    )
    assert result.returncode == 1, result.stderr
    assert (
        f"--executor dask: a worker cannot see {kit.out / 'inputs' / 'manifest.json'}, {kit.repo}; "
        "workers must see --out, --source and the inputs at the same paths"
    ) in result.stderr
    assert kit.probes() == []
    assert not (kit.out / "attempts").exists() or not any((kit.out / "attempts").iterdir())
