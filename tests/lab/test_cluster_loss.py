"""`--executor dask` when workers die, with real `dask scheduler` and `dask worker` processes
started with the TLS options `forge evaluate cluster-certs` prints.

A killed worker's attempt dies with it on the worker's machine (the deathwatch), before Dask
could re-run it anywhere: these clusters have no other worker to re-run it on. A scheduler left
without workers ends the run after `[lab] dask_no_worker_s` (3 s here, through forge.toml), and the
run resumes once a worker joins.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from distributed import Client

from forge.attempt.command import MARKER_ENV
from forge.attempt.watcher import sweep
from forge.lab.cluster import client_security
from forge.lab.cluster_tls import client_tls, dask_tls_options

from .kit import HELD_MS, Kit, marker_processes, wait_for, wait_until

NO_WORKER_S = 3

StartWorker = Callable[..., subprocess.Popen[bytes]]


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def scheduler(tmp_path: Path, cluster_certs: Path) -> Iterator[str]:
    """A `dask scheduler` process on 127.0.0.1 with no worker; its address (tls://)."""
    scheduler_file = tmp_path / "scheduler.json"
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "distributed.cli.dask_scheduler"),
            *("--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0"),
            *("--scheduler-file", str(scheduler_file)),
            *dask_tls_options(cluster_certs, "scheduler"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until(scheduler_file.exists, "the scheduler to write its address")
        wait_until(lambda: bool(scheduler_file.read_text()), "the scheduler file to be whole")
        address = str(json.loads(scheduler_file.read_text())["address"])
        assert address.startswith("tls://")
        yield address
    finally:
        _stop(process)


@pytest.fixture
def start_worker(scheduler: str, cluster_certs: Path) -> Iterator[StartWorker]:
    """`start_worker(nthreads=1)`: a `dask worker` process without a nanny (its pid is the
    worker's), registered with the scheduler before it is returned; all are stopped at the end."""
    workers: list[subprocess.Popen[bytes]] = []

    def start(nthreads: int = 1) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "distributed.cli.dask_worker", scheduler),
                *("--host", "127.0.0.1", "--no-nanny", "--no-dashboard"),
                *("--nthreads", str(nthreads)),
                *dask_tls_options(cluster_certs, "worker"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        workers.append(process)
        with Client(scheduler, security=client_security(client_tls(cluster_certs))) as client:
            client.wait_for_workers(1, timeout=60)
        return process

    yield start
    for process in workers:
        _stop(process)


@pytest.fixture
def on_dask(scheduler: str, cluster_certs: Path) -> tuple[str, ...]:
    """The CLI's options for the TLS scheduler."""
    return ("--executor", "dask", "--scheduler", scheduler, "--cluster-certs", str(cluster_certs))


@pytest.fixture
def bounded(tmp_path: Path) -> dict[str, str]:
    """The CLI's environment: a forge.toml that gives up on a workerless cluster after 3 s."""
    toml = tmp_path / "forge.toml"
    toml.write_text(f"[lab]\ndask_no_worker_s = {NO_WORKER_S}\n")
    return {"FORGE_CONFIG": str(toml)}


def test_a_killed_workers_attempts_die_with_it_and_the_run_ends_then_resumes(
    kit: Kit,
    scheduler: str,
    on_dask: tuple[str, ...],
    start_worker: StartWorker,
    bounded: dict[str, str],
) -> None:
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_GATE": "1", "FAKE_STRAY": "1"}, timeout_ms=HELD_MS),
        b=kit.formula("b", knobs={"FAKE_GATE": "1"}, model="m2", timeout_ms=HELD_MS),
        tasks={"t1": kit.plan("t1")},
    )
    worker = start_worker(nthreads=2)
    approve = ("--approve", kit.digest(), *on_dask)
    process = kit.start(*approve, "--parallel", "2", env=bounded)
    wait_for(kit.ctl, "started-*", 2, process)
    harnesses = kit.harnesses()
    assert len(harnesses) == 2
    trees = [(kit.out / "attempts" / "t1" / v / "rep-1" / "work").resolve() for v in "ab"]
    assert all(tree.is_dir() for tree in trees)
    assert all(worker.pid in {p.pid for p in h.parents()} for h in harnesses)
    stray = next(  # as the host sees it: a sandboxed harness knows its namespace's pids only
        process
        for process in map(psutil.Process, marker_processes(str(kit.ctl)))
        if process.cmdline()[:1] == ["sleep"]
    )
    assert stray.ppid() != worker.pid
    assert stray.pid in marker_processes(str(kit.ctl))

    worker.kill()
    killed_at = time.monotonic()
    wait_until(
        lambda: not marker_processes(str(kit.ctl)), "the dead worker's attempts to be killed"
    )
    assert not stray.is_running() or stray.status() == psutil.STATUS_ZOMBIE

    _, stderr = process.communicate(timeout=90)
    assert time.monotonic() - killed_at >= NO_WORKER_S
    assert process.returncode == 1, stderr
    assert (
        f"executor lost: the Dask scheduler {scheduler} has had no worker for {NO_WORKER_S} s "
        "while t1/a/rep-1, t1/b/rep-1 waited; start a worker and run the same command to resume"
    ) in stderr
    assert "waiting for a Dask worker (0 s)" in stderr
    assert kit.report()["status"] == "aborted"
    assert not list((kit.out / "attempts").rglob("rep-1"))
    assert not any(tree.exists() for tree in trees)  # the private trees went with them

    start_worker()
    (kit.ctl / "go").write_text("")
    resumed = kit.cli(*approve, env=bounded)
    assert resumed.returncode == 0, resumed.stderr
    report = kit.report()
    assert report["status"] == "complete"
    assert [a["variant"] for a in report["attempts"]] == ["a", "b"]
    # The report says what happened to the run: the lost worker, what it took, the resume.
    said = [event["text"] for event in report["history"]["events"]]
    assert report["history"]["resumes"] == 1, said
    assert report["history"]["interruptions"] == 1, said
    assert any("run ended aborted" in text and "executor lost" in text for text in said), said
    assert sum("rep-1 discarded" in text for text in said) == 2, said
    history_md = (kit.out / "report.md").read_text().split("## History", 1)[1]
    assert "executor lost" in history_md


def test_a_scheduler_without_workers_is_refused_after_the_bound(
    kit: Kit, scheduler: str, on_dask: tuple[str, ...], bounded: dict[str, str]
) -> None:
    """The path probe waits for a worker like an attempt would; none comes, so nothing runs."""
    kit.cohort(a=kit.formula("a"), b=kit.formula("b", model="m2"), tasks={"t1": kit.plan("t1")})
    result = kit.cli("--approve", kit.digest(), *on_dask, env=bounded)
    assert result.returncode == 1, result.stderr
    assert (
        f"--executor dask: the Dask scheduler {scheduler} has had no worker for {NO_WORKER_S} s "
        "while the path probe waited"
    ) in result.stderr
    assert kit.probes() == []


def test_the_sweep_kills_marked_processes_and_their_groups(tmp_path: Path) -> None:
    """What the watcher does once the worker is gone: a marked leader, an unmarked member of its
    group and a marked double-forked stray in a session of its own all die; others live."""
    marker = f"sweep-{tmp_path.name}"
    script = (
        "import os, subprocess\n"
        "subprocess.Popen(['sleep', '300'], env={})\n"  # same group, no marker
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    os.execvp('sleep', ['sleep', '301'])\n"
        "os.execvp('sleep', ['sleep', '302'])\n"
    )
    leader = subprocess.Popen(
        [sys.executable, "-c", script],
        env={MARKER_ENV: marker, "PATH": "/usr/bin:/bin"},
        start_new_session=True,
    )
    bystander = subprocess.Popen(["sleep", "303"], start_new_session=True)
    try:
        wait_until(lambda: len(_group_and_marked(leader.pid, marker)) == 3, "the tree to start")
        assert sweep(MARKER_ENV, marker) == 3
        leader.wait(timeout=30)
        wait_until(lambda: not _group_and_marked(leader.pid, marker), "the tree to be gone")
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def _group_and_marked(pgid: int, marker: str) -> set[int]:
    """Live processes in group `pgid` or carrying `marker`."""
    found = set()
    for proc in psutil.process_iter():
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if os.getpgid(proc.pid) == pgid or proc.environ().get(MARKER_ENV) == marker:
                found.add(proc.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError):
            continue
    return found
