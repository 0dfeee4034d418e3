"""Descriptors a worker lends its supervisor: borrowed once, owned by the borrower, and a dead
generation's lending pair closed with it."""

from __future__ import annotations

import os
import signal

from forge.ipc.manager import WorkerManager
from forge.workers.walker.protocol import WALKER

from .helpers import misbehaving, ready


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_a_lent_pipe_is_read_by_the_borrower_after_the_worker_closed_its_copies(
    manager: WorkerManager,
) -> None:
    worker = manager.start(misbehaving("lender", lend="hello from the worker"))
    await ready(worker)
    fd = worker.borrow()
    assert fd is not None
    try:
        assert os.read(fd, 100) == b"hello from the worker"
        assert os.read(fd, 100) == b""  # the worker closed the write end: the pipe is ours
        assert os.get_inheritable(fd) is False
        assert worker.borrow() is None  # lent once, borrowed once
    finally:
        os.close(fd)


async def test_a_restarted_worker_lends_anew_and_dead_generations_leave_no_descriptor_here(
    manager: WorkerManager,
) -> None:
    worker = manager.start(misbehaving("lender", lend="first"))
    await ready(worker)
    before = open_fds()
    for restarts in (1, 2, 3):
        assert worker.pid is not None
        os.kill(worker.pid, signal.SIGKILL)
        await ready(worker, restarts)
    assert open_fds() == before  # three generations' pairs closed with them (a loan still in
    # flight is the kernel's to release, never in this table)
    fd = worker.borrow()
    assert fd is not None
    try:
        assert os.read(fd, 100) == b"first"
    finally:
        os.close(fd)


async def test_a_kind_that_does_not_lend_has_nothing_to_borrow(manager: WorkerManager) -> None:
    walker = manager.start(WALKER.spec("walker"))
    await ready(walker)
    assert walker.borrow() is None
