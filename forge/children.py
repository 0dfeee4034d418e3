"""Learning that a process ended, and signalling its group: a pidfd on the event loop, and killpg.

A pidfd costs nothing while the process lives and wakes the loop within one iteration of its
exit. Unlike asyncio's child watchers it works for any pid (a child or not), never reaps, and
never waits for the process's pipes to close (an escaped grandchild may hold them for hours).
The owner reaps once told (`Popen.wait`, `os.waitpid`, `PtyProcess.wait`), so the exit status
stays with it. Used by the worker launcher, the terminal's shells, Chromium and `procs`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable


class ExitWatch:
    """Calls `on_exit()` once, from the event loop, when process `pid` has exited.

    Raises `ProcessLookupError` when `pid` is already gone (reaped). `close` stops watching; it
    is idempotent and the watch closes itself before calling `on_exit`. `pidfd`: one already
    opened by whoever knew the process was alive (the watch then owns and closes it).
    """

    def __init__(
        self,
        pid: int,
        on_exit: Callable[[], object],
        loop: asyncio.AbstractEventLoop | None = None,
        *,
        pidfd: int | None = None,
    ) -> None:
        self.pid = pid
        self._on_exit = on_exit
        self._loop = loop or asyncio.get_running_loop()
        self._fd: int | None = os.pidfd_open(pid) if pidfd is None else pidfd
        self._loop.add_reader(self._fd, self._exited)

    def _exited(self) -> None:
        self.close()
        self._on_exit()

    def close(self) -> None:
        if self._fd is None:
            return
        self._loop.remove_reader(self._fd)
        os.close(self._fd)
        self._fd = None


def signal_group(pgid: int, signum: int) -> bool:
    """Send `signum` to process group `pgid`; False when the group is gone (never an error)."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True
