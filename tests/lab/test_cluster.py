"""`--executor dask` against a real LocalCluster of 2 worker processes (rows X1-X5), over TLS
with the certificates `forge evaluate cluster-certs` makes; one plain `tcp://` cluster for the
`--insecure-cluster` run."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, LocalCluster
from distributed.comm.core import CommClosedError
from distributed.security import Security

from forge.lab.cluster import client_security
from forge.lab.cluster_tls import (
    CA_FILE,
    cert_file,
    client_tls,
    dask_tls_options,
    key_file,
    make_cluster_certs,
)

from .kit import HELD_MS, Kit, marker_processes, normalised, wait_for, wait_until

ANY_HTTP_PORT = {"dashboard_address": ":0"}
"""The scheduler serves HTTP even without a dashboard, by default on 8787: with that port taken
(another run on the machine) it warns, and warnings are errors here."""


WORKERS = 2


def cluster_security(folder: Path) -> Security:
    """Every role's TLS files, for a LocalCluster's scheduler and workers (and its own client)."""
    files: dict[str, Any] = {"tls_ca_file": str(folder / CA_FILE)}
    for role in ("scheduler", "worker", "client"):
        files[f"tls_{role}_cert"] = str(cert_file(folder, role))
        files[f"tls_{role}_key"] = str(key_file(folder, role))
    return Security(require_encryption=True, **files)


def client_of(folder: Path) -> Security:
    """forge's own client side of the cluster's TLS."""
    security = client_security(client_tls(folder))
    assert security is not None
    return security


@pytest.fixture(scope="module")
def scheduler(cluster_certs: Path) -> Iterator[str]:
    """A TLS cluster's address. Its workers are never killed (a nanny that restarts a killed
    worker can close for good on a loaded machine), so both stay up for every test."""
    with LocalCluster(
        n_workers=WORKERS,
        processes=True,
        threads_per_worker=1,
        security=cluster_security(cluster_certs),
        **ANY_HTTP_PORT,
    ) as cluster:
        assert cluster.scheduler_address.startswith("tls://")
        yield cluster.scheduler_address


@pytest.fixture
def on_dask(scheduler: str, cluster_certs: Path) -> tuple[str, ...]:
    """The CLI's options for the TLS cluster."""
    return ("--executor", "dask", "--scheduler", scheduler, "--cluster-certs", str(cluster_certs))


def test_dask_run_reports_what_a_local_run_reports(kit: Kit, on_dask: tuple[str, ...]) -> None:
    kit.cohort(
        a=kit.formula("a"),
        b=kit.formula("b", knobs={"FAKE_ACTION": "none", "FAKE_OUTCOME": "no-change"}),
        tasks={"t1": kit.plan("t1"), "t2": kit.plan("t2")},
    )
    digest = kit.digest()
    on_cluster = kit.cli("--approve", digest, *on_dask, "--parallel", "2")
    assert on_cluster.returncode == 2, on_cluster.stderr
    local_out = kit.root / "local"
    local = kit.cli("--approve", kit.digest(out=local_out), "--parallel", "2", out=local_out)
    assert local.returncode == 2, local.stderr
    dask_report, local_report = (
        normalised(kit.report()),
        normalised(json.loads((local_out / "report.json").read_text())),
    )
    assert dask_report["attempts"] == local_report["attempts"]
    assert dask_report["variants"] == local_report["variants"]
    assert dask_report["seal"] == local_report["seal"]  # no insecureCluster
    assert json.loads((kit.out / "runs.jsonl").read_text().splitlines()[0])["executor"] == "dask"


def test_sigint_cancels_running_attempts_on_the_cluster(kit: Kit, on_dask: tuple[str, ...]) -> None:
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_GATE": "1", "FAKE_STRAY": "1"}, timeout_ms=HELD_MS),
        b=kit.formula("b", knobs={"FAKE_GATE": "1"}, model="m2", timeout_ms=HELD_MS),
        tasks={"t1": kit.plan("t1")},
    )
    process = kit.start("--approve", kit.digest(), *on_dask, "--parallel", "2")
    wait_for(kit.ctl, "started-*", 2, process)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=90)
    assert process.returncode == 130, stderr
    assert marker_processes(str(kit.ctl)) == []
    assert not list((kit.out / "attempts").rglob("attempt.json"))
    assert kit.report()["status"] == "aborted"


def test_an_unreachable_scheduler_is_refused(kit: Kit, cluster_certs: Path) -> None:
    kit.cohort(a=kit.formula("a"), b=kit.formula("b", model="m2"), tasks={"t1": kit.plan("t1")})
    result = kit.cli(
        *("--approve", kit.digest(), "--executor", "dask", "--scheduler", "tls://127.0.0.1:9"),
        *("--cluster-certs", str(cluster_certs)),
        env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"},
    )
    assert result.returncode == 1
    assert "cannot reach the Dask scheduler" in result.stderr
    assert kit.probes() == []


@pytest.fixture
def insecure_scheduler() -> Iterator[str]:
    """A plain `tcp://` cluster of one worker, this test's own (it kills the worker)."""
    with LocalCluster(
        n_workers=1, processes=True, threads_per_worker=1, **ANY_HTTP_PORT
    ) as cluster:
        assert cluster.scheduler_address.startswith("tcp://")
        yield cluster.scheduler_address


def test_a_lost_worker_aborts_instead_of_retrying_and_an_insecure_cluster_is_reported(
    kit: Kit, insecure_scheduler: str
) -> None:
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_GATE": "1"}, timeout_ms=HELD_MS),
        b=kit.formula("b", model="m2"),
        tasks={"t1": kit.plan("t1")},
    )
    on_dask = ("--executor", "dask", "--scheduler", insecure_scheduler, "--insecure-cluster")
    preview = kit.cli(*on_dask)
    assert f"Runs in: the Dask cluster at {insecure_scheduler}, WITHOUT TLS" in preview.stdout
    process = kit.start("--approve", kit.digest(), *on_dask)
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
    report = kit.report()
    assert report["status"] == "aborted"
    assert report["seal"]["insecureCluster"] is True
    assert any(note.startswith("Insecure cluster: ") for note in report["notes"])
    assert (
        "on a Dask cluster WITHOUT TLS (--insecure-cluster)" in (kit.out / "report.md").read_text()
    )
    assert json.loads((kit.out / "runs.jsonl").read_text())["insecureCluster"] is True
    assert not (kit.out / "attempts" / "t1" / "a" / "rep-1").exists()
    assert marker_processes(str(kit.ctl)) == []


def test_attempts_stop_on_a_stale_lease_when_the_client_dies(
    kit: Kit, on_dask: tuple[str, ...]
) -> None:
    """X4: SIGKILL the CLI mid-run; its attempts on the cluster notice the lease going stale
    (scaled from 5 s / 30 s down to 0.2 s / 3 s), kill their process trees and discard their
    directories. The harnesses are children of the Dask worker, not of the dead CLI."""
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_GATE": "1"}, timeout_ms=HELD_MS),
        b=kit.formula("b", knobs={"FAKE_GATE": "1"}, model="m2", timeout_ms=HELD_MS),
        tasks={"t1": kit.plan("t1")},
    )
    process = kit.start(
        *("--approve", kit.digest(), *on_dask, "--parallel", "2"),
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


@contextlib.contextmanager
def lone_worker(certs: Path, wrapper: tuple[str, ...], tls_dir: Path) -> Iterator[str]:
    """A TLS LocalCluster scheduler whose only worker is `wrapper` + `dask worker`, with its
    ca.pem, worker.pem and worker.key in `tls_dir` (as the worker sees it)."""
    with LocalCluster(
        n_workers=0, processes=True, security=cluster_security(certs), **ANY_HTTP_PORT
    ) as cluster:
        address = cluster.scheduler_address
        worker = subprocess.Popen(
            [
                *wrapper,
                *(sys.executable, "-m", "distributed.cli.dask_worker", address),
                *("--no-nanny", "--nthreads", "1", "--no-dashboard"),
                *dask_tls_options(tls_dir, "worker"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            with Client(address, security=client_of(certs)) as client:
                client.wait_for_workers(1, timeout=60)
            yield address
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=60)


@pytest.fixture(params=sorted(BLINDFOLDS))
def blind_worker_scheduler(
    request: pytest.FixtureRequest, tmp_path: Path, cluster_certs: Path
) -> Iterator[str]:
    """A scheduler whose only worker cannot see tmp_path. The worker's TLS files are its own
    copy outside pytest's folders, owned by user 65534 (`another-user` must read them)."""
    with tempfile.TemporaryDirectory(prefix="forge-worker-tls-") as own:
        for name in (CA_FILE, "worker.pem", "worker.key"):
            shutil.copy(cluster_certs / name, own)
        for path in (own, *(os.path.join(own, name) for name in os.listdir(own))):
            os.chown(path, 65534, 65534)
        wrapper = (*BLINDFOLDS[request.param], str(tmp_path))
        with lone_worker(cluster_certs, wrapper, Path(own)) as address:
            yield address


def test_a_worker_that_cannot_see_the_run_paths_is_refused_before_any_attempt(
    kit: Kit, blind_worker_scheduler: str, cluster_certs: Path
) -> None:
    """X3: the probe task runs on the worker first; unseen paths refuse the run (exit 1)."""
    kit.cohort(a=kit.formula("a"), b=kit.formula("b", model="m2"), tasks={"t1": kit.plan("t1")})
    result = kit.cli(
        *("--approve", kit.digest(), "--executor", "dask", "--scheduler", blind_worker_scheduler),
        *("--cluster-certs", str(cluster_certs)),
    )
    assert result.returncode == 1, result.stderr
    assert (
        f"--executor dask: a worker cannot see {kit.out / 'inputs' / 'manifest.json'}, {kit.repo}; "
        "workers must see --out, --source and the inputs at the same paths"
    ) in result.stderr
    assert kit.probes() == []
    assert not (kit.out / "attempts").exists() or not any((kit.out / "attempts").iterdir())


WORKER_TLS_AT = "/etc/opt/forge-tls"
"""Where the next test's worker keeps its TLS files: under /etc, which the sandbox shows, in the
worker's own mount namespace (a tmpfs on the empty /etc/opt), so the host is untouched."""


def test_a_recipe_cannot_read_the_workers_tls_key(kit: Kit, cluster_certs: Path) -> None:
    """Any key of the cluster's CA submits work as forge does: the folders of the worker's TLS
    files are hidden from the recipe's sandbox, while the rest of /etc/opt stays visible."""
    mounted = (
        *("unshare", "--mount", "--propagation", "private", "sh", "-c"),
        f"mount -t tmpfs forge-tls /etc/opt && mkdir {WORKER_TLS_AT} && "
        f'cp "$0/{CA_FILE}" "$0/worker.pem" "$0/worker.key" {WORKER_TLS_AT} && '
        'touch /etc/opt/visible && exec "$@"',
        str(cluster_certs),
    )
    key = f"{WORKER_TLS_AT}/worker.key"
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_PEEK": f"{key}:{WORKER_TLS_AT}:/etc/opt/visible"}),
        b=kit.formula("b", model="m2"),
        tasks={"t1": kit.plan("t1")},
    )
    with lone_worker(cluster_certs, mounted, Path(WORKER_TLS_AT)) as address:
        result = kit.cli(
            *("--approve", kit.digest(), "--executor", "dask", "--scheduler", address),
            *("--cluster-certs", str(cluster_certs)),
        )
    assert result.returncode == 0, result.stderr
    (probe,) = [p for p in kit.probes() if p["coordinate"] == "t1/a/rep-1"]
    assert probe["visible"] == {key: False, WORKER_TLS_AT: False, "/etc/opt/visible": True}


def _touch(path: str) -> None:
    Path(path).touch()


def _run_function_as(address: str, security: Security | None, marker: Path) -> None:
    """Connect to the scheduler with `security` and run a function that touches `marker`."""
    with Client(address, security=security, timeout=60) as client:
        client.submit(_touch, str(marker), pure=False).result(timeout=60)


class Presenting(Security):
    """A client's TLS that presents only what `context` holds (Dask's own `Security` will not
    connect over TLS without a certificate of its own)."""

    def __init__(self, context: ssl.SSLContext) -> None:
        super().__init__(require_encryption=True)
        self.context = context

    def get_connection_args(self, role: str) -> dict[str, Any]:
        del role
        return {"ssl_context": self.context, "require_encryption": True, "extra_conn_args": {}}


@pytest.mark.parametrize("attacker", ["plain-tcp", "tls-without-certificate", "another-ca"])
def test_the_tls_scheduler_runs_nothing_for_a_client_without_its_certificate(
    scheduler: str, cluster_certs: Path, tmp_path: Path, attacker: str
) -> None:
    """What a recipe with network on a worker's machine could do: connect to the scheduler and
    submit a function. Without a certificate of the cluster's CA the connection is refused."""
    marker = tmp_path / "ran"
    address, security = scheduler, None
    if attacker == "plain-tcp":
        address = scheduler.replace("tls://", "tcp://")
    elif attacker == "tls-without-certificate":
        context = ssl.create_default_context(cafile=cluster_certs / CA_FILE)
        context.check_hostname = False
        security = Presenting(context)
    else:
        other = tmp_path / "other"
        make_cluster_certs(other, now=datetime.datetime.now(datetime.UTC))
        security = Security(  # trusts the real scheduler, presents the other CA's client
            require_encryption=True,
            tls_ca_file=str(cluster_certs / CA_FILE),
            tls_client_cert=str(other / "client.pem"),
            tls_client_key=str(other / "client.key"),
        )
    with pytest.raises(CommClosedError):  # the scheduler closed the handshake
        _run_function_as(address, security, marker)
    assert not marker.exists()
    _run_function_as(scheduler, client_of(cluster_certs), marker)  # what forge's certificate may
    assert marker.exists()
