"""The no-worker wait: how long tasks have waited without a worker, and when the run gives up."""

from __future__ import annotations

from forge.lab.noworker import NoWorkerWait, waiting_note


def test_a_wait_runs_while_tasks_wait_without_a_worker_and_expires_at_the_bound() -> None:
    wait = NoWorkerWait(bound_s=60)
    assert wait.observe(100.0, workers=1, waiting=2) is None
    assert wait.observe(101.0, workers=0, waiting=2) == 0.0
    assert wait.observe(131.0, workers=0, waiting=2) == 30.0
    assert not wait.expired(30.0)
    waited = wait.observe(161.0, workers=0, waiting=1)
    assert waited == 60.0
    assert wait.expired(waited)


def test_a_worker_joining_or_nothing_waiting_ends_the_wait() -> None:
    wait = NoWorkerWait(bound_s=60)
    wait.observe(0.0, workers=0, waiting=1)
    assert wait.observe(50.0, workers=1, waiting=1) is None
    assert wait.observe(55.0, workers=0, waiting=1) == 0.0
    assert wait.observe(59.0, workers=0, waiting=0) is None
    assert wait.observe(70.0, workers=0, waiting=1) == 0.0
    assert not wait.expired(None)


def test_the_note_counts_whole_seconds() -> None:
    assert waiting_note(12.4) == "waiting for a Dask worker (12 s)"
