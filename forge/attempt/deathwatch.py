"""An attempt dies with the process running it: a tiny watcher kills what a dead host leaves.

An attempt runs in a host process: an attempt-runner worker (`forge.workers.lab`, which dies
with the `forge evaluate` or `forge supervise` that started it) or a Dask worker. Each command of
an attempt leads a session of its own and gets SIGKILL when the thread that forked it dies
(`die_with_parent`), but the rest of its tree (children, a double-forked stray in its own
session, a sandboxed recipe whose bubblewrap was killed) would outlive a kill -9 of the host, and
nothing would ever clean it. So the host starts this watcher before the attempt, in a session of
its own and without a parent-death signal. It waits on a pidfd of the host *process* (not of the
thread running the attempt, which a Dask worker's pool owns) and on its stdin:
- `done` on stdin: the attempt ended and cleaned up after itself; the watcher exits.
- the host exits, or stdin closes without `done` (only the host held the other end): the
  attempt is lost. The watcher SIGKILLs every process carrying the attempt's marker variable and
  every member of their process groups, sweeping until none is left, then exits.
A watcher that starts after its host already died (its parent is no longer the host) sweeps at
once, so no window is left between the fork and the pidfd. The watcher imports only `forge.procs`
(the marker's name comes on its command line), so it starts in a fraction of a worker's time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import AsyncIterator, Sequence

from forge.attempt.errors import RunAborted
from forge.procs import find_by_environ, group_pids, is_live

READY = b"ready\n"
"""The watcher's one line on stdout: it holds the pidfd and is waiting."""
DONE = b"done\n"
"""What the task writes when the attempt ended on its own."""
READY_WITHIN_S = 60.0
"""How long a task waits for its watcher to start (an interpreter start on a loaded worker)."""
SWEEP_S = 0.02
"""The pause between two sweeps, while SIGKILLed processes finish exiting."""
SWEEP_FOR_S = 10.0
"""A bound on the sweeps, for a tree that forks faster than it is killed."""


@contextlib.asynccontextmanager
async def deathwatch(marker: str, attempt_id: str) -> AsyncIterator[None]:
    """Run the body under a watcher that kills attempt `attempt_id` if this process dies; the
    attempt's processes carry `marker=attempt_id` in their environment."""
    watcher = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        __name__,
        str(os.getpid()),
        marker,
        attempt_id,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    assert watcher.stdin is not None
    assert watcher.stdout is not None
    ready = False
    try:
        with contextlib.suppress(TimeoutError):
            ready = await asyncio.wait_for(watcher.stdout.readline(), READY_WITHIN_S) == READY
        if not ready:
            raise RunAborted(
                f"attempt {attempt_id}: the watcher that ties it to its host process did not start"
            )
        yield
    finally:
        if ready:
            with contextlib.suppress(ConnectionError):
                watcher.stdin.write(DONE)
                await watcher.stdin.drain()
        else:
            with contextlib.suppress(ProcessLookupError):
                watcher.kill()
        watcher.stdin.close()
        await watcher.wait()


def main(argv: Sequence[str]) -> int:
    """`python -m forge.attempt.deathwatch <host pid> <marker variable> <attempt id>`."""
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
