"""No worker outlives its supervisor: the kernel kills it when its parent dies.

`PR_SET_PDEATHSIG` asks Linux to send SIGKILL when the parent *thread* that forked us exits, so
spawn workers (and a worker's own children) from the event loop's thread. It is set after exec,
so the parent may already be gone by then: `die_with_parent` checks the parent pid afterwards.
"""

from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1
"""From <linux/prctl.h>."""


def set_parent_death_signal(signum: int = signal.SIGKILL) -> None:
    """Ask the kernel to send `signum` to this process when its parent dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl(PR_SET_PDEATHSIG): {os.strerror(errno)}")


def parent_is(expected_parent: int) -> bool:
    """Whether the process that started us is still our parent (not reparented to a reaper)."""
    return os.getppid() == expected_parent


def die_with_parent(expected_parent: int | None = None) -> None:
    """SIGKILL on parent death, and exit at once if the parent died before we could ask.

    Also usable as `preexec_fn` for a worker's own children (a shell, Chromium), which then die
    with the worker; call it with no argument there.
    """
    set_parent_death_signal(signal.SIGKILL)
    if expected_parent is not None and not parent_is(expected_parent):
        os._exit(1)
