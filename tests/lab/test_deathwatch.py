"""The deathwatch's own end: an attempt whose watcher was killed still ends as it would."""

from __future__ import annotations

import asyncio
import os
import signal

import psutil

from forge.attempt import watcher
from forge.attempt.deathwatch import deathwatch


def _watcher() -> psutil.Process:
    (found,) = [
        child
        for child in psutil.Process(os.getpid()).children()
        if watcher.__name__ in child.cmdline()
    ]
    return found


async def test_an_attempt_whose_watcher_was_killed_ends_as_it_would() -> None:
    """A kill -9 of every process carrying the attempt runner's name (the chaos run's fault)
    takes the watcher too; telling a dead watcher `done` raised RuntimeError on uvloop and
    aborted the whole Lab run."""
    async with deathwatch("FORGE_TEST_MARKER", "t1/a/rep-1"):
        killed = _watcher()
        await _kill_and_see_it_exit(killed.pid)
    assert not psutil.pid_exists(killed.pid)  # reaped by the deathwatch's own wait


async def _kill_and_see_it_exit(pid: int) -> None:
    """SIGKILL `pid` and wait until it has exited, leaving the reaping to its parent's loop."""
    pidfd = os.pidfd_open(pid)
    exited = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_reader(pidfd, exited.set)
    try:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        await exited.wait()
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
