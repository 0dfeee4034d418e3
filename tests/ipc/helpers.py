"""Timings and helpers the ipc tests share."""

from __future__ import annotations

import dataclasses

from forge.ipc.manager import WorkerHandle, WorkerSpec
from forge.ipc.policy import LifecycleTimings
from forge.testing.misbehaving_protocol import MISBEHAVING

TEST_TIMINGS = LifecycleTimings(
    hello_timeout=30.0,
    stop_timeout=5.0,
    kill_grace=0.5,
    request_timeout=30.0,
    backoff_initial=0.02,
    backoff_max=0.2,
    backoff_jitter=0.0,
)
"""Fast restarts; heartbeats stay at 1 s so a loaded machine never looks hung by accident."""

HANG_TIMINGS = dataclasses.replace(TEST_TIMINGS, heartbeat_interval=0.1, kill_grace=2.0)
"""For hang tests: heartbeats every 0.1 s, hung after 0.5 s of silence; a loaded machine still
gets 2 s to act on SIGTERM."""


def misbehaving(name: str, **config: object) -> WorkerSpec:
    return MISBEHAVING.spec(name, config=config)


async def ready(handle: WorkerHandle, restarts: int = 0) -> None:
    """Wait until the handle's worker is ready after exactly `restarts` restarts."""
    await handle.wait_for(lambda row: row.state == "ready" and row.restarts == restarts, 60.0)
