"""The watcher process of `forge.attempt.deathwatch`: waits on its host, sweeps if it dies.

`python -m forge.attempt.watcher <host pid> <marker variable> <attempt id>`. One starts beside
every attempt, so its start is kept to the interpreter's own: it imports only the standard
library's os, select and time until its host dies, and `forge.procs` (psutil) only to sweep.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Sequence

READY = b"ready\n"
"""The watcher's one line on stdout: it holds the pidfd and is waiting."""
DONE = b"done\n"
"""What the task writes when the attempt ended on its own."""
SWEEP_S = 0.02
"""The pause between two sweeps, while SIGKILLed processes finish exiting."""
SWEEP_FOR_S = 10.0
"""A bound on the sweeps, for a tree that forks faster than it is killed."""


def main(argv: Sequence[str]) -> int:
    """Wait for the attempt's end; if the host died first, sweep the attempt's processes."""
    worker, marker, attempt_id = int(argv[0]), argv[1], argv[2]
    spared = _group_of(worker)
    if _worker_died(worker):
        killed = sweep(marker, attempt_id, spared_group=spared)
        with contextlib.suppress(OSError):  # The worker's stderr may have died with it.
            sys.stderr.write(
                f"forge: attempt host {worker} died; killed {killed} process(es) of attempt "
                f"{attempt_id}\n"
            )
            sys.stderr.flush()
    return 0


def _worker_died(worker: int) -> bool:
    """Block until the attempt ends (False) or the worker process is gone (True)."""
    try:
        pidfd = os.pidfd_open(worker)
    except ProcessLookupError:
        return True
    if os.getppid() != worker:
        return True  # Reparented: the worker died before the pidfd opened; its pid may be reused.
    os.write(sys.stdout.fileno(), READY)
    stdin = sys.stdin.fileno()
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(stdin, select.POLLIN)
    if any(fd == pidfd for fd, _ in poller.poll()):
        return True
    return os.read(stdin, len(DONE)) != DONE


def sweep(marker: str, attempt_id: str, *, spared_group: int | None = None) -> int:
    """SIGKILL the attempt's marked processes and their groups until none is left; how many.

    `spared_group` (the worker's own group) is never swept as a group, whatever lands in it.
    """
    from forge.procs import find_by_environ, group_pids, is_live  # only a lost attempt needs it

    killed: set[int] = set()
    deadline = time.monotonic() + SWEEP_FOR_S
    while time.monotonic() < deadline:
        marked = find_by_environ(marker, attempt_id)
        groups = {_group_of(pid) for pid in marked} - {None, spared_group, os.getpgid(0)}
        members = {pid for group in groups if group is not None for pid in group_pids(group)}
        live = [pid for pid in sorted(set(marked) | members) if pid != os.getpid() and is_live(pid)]
        if not live:
            break
        for pid in live:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        killed.update(live)
        time.sleep(SWEEP_S)
    return len(killed)


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
