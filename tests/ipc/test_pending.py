"""In-flight requests on a ManualClock: each times out at its own deadline, exactly once."""

from __future__ import annotations

import asyncio

import pytest

from forge.ipc.errors import RequestTimeout, WorkerCrashed
from forge.ipc.messages import Reply
from forge.ipc.pending import PendingRequests
from forge.testing.clock import ManualClock


async def settle() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


async def test_each_request_times_out_at_its_own_deadline() -> None:
    clock = ManualClock()
    pending = PendingRequests("w", clock)
    _, short = pending.open(1.0)
    _, long = pending.open(5.0)
    await settle()
    clock.advance(1.0)
    await settle()
    assert isinstance(short.exception(), RequestTimeout)
    assert not long.done()
    clock.advance(4.0)
    await settle()
    with pytest.raises(RequestTimeout, match="worker w: no answer within 5 s"):
        long.result()
    assert len(pending) == 0


async def test_a_reply_cancels_the_deadline_and_a_late_one_is_ignored() -> None:
    clock = ManualClock()
    pending = PendingRequests("w", clock)
    request_id, answer = pending.open(1.0)
    await settle()
    assert pending.resolve(request_id, Reply("ok"))
    assert answer.result() == Reply("ok")
    await settle()
    assert clock.sleepers == 0
    assert not pending.resolve(request_id, Reply("late"))
    assert not pending.fail(None, WorkerCrashed("w", "x"))


async def test_fail_all_answers_every_request_at_once() -> None:
    pending = PendingRequests("w", ManualClock())
    answers = [pending.open(10.0)[1] for _ in range(3)]
    assert pending.fail_all(lambda: WorkerCrashed("w", "died")) == 3
    assert all(isinstance(a.exception(), WorkerCrashed) for a in answers)
    assert pending.fail_all(lambda: WorkerCrashed("w", "died")) == 0
