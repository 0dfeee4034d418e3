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
once, so no window is left between the fork and the pidfd. The watcher is its own module
(`forge.attempt.watcher`, the marker's name on its command line) and imports nothing but the
standard library until it must sweep, so it starts in a bare interpreter's time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator

from forge import eventloop
from forge.attempt import watcher as watcher_module
from forge.attempt.errors import RunAborted
from forge.attempt.watcher import DONE, READY

READY_WITHIN_S = 60.0
"""How long a task waits for its watcher to start (an interpreter start on a loaded worker)."""


@contextlib.asynccontextmanager
async def deathwatch(marker: str, attempt_id: str) -> AsyncIterator[None]:
    """Run the body under a watcher that kills attempt `attempt_id` if this process dies; the
    attempt's processes carry `marker=attempt_id` in their environment."""
    watcher = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        watcher_module.__name__,
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
            with contextlib.suppress(ConnectionError):  # a watcher killed meanwhile
                if eventloop.write_to_pipe(watcher.stdin, DONE):
                    await watcher.stdin.drain()
        else:
            with contextlib.suppress(ProcessLookupError):
                watcher.kill()
        watcher.stdin.close()
        await watcher.wait()
