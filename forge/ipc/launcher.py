"""The mechanism under the manager: start a worker process, learn of its death, signal its group.

No policy lives here (no restarts, no timeouts): the manager decides, the launcher does. Death is
learned through a pidfd on the event loop, so it costs nothing while the worker lives and arrives
within one loop iteration of the exit.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from forge.children import ExitWatch, signal_group
from forge.ipc.exits import ExitStatus


class WorkerProcess:
    """One started process, leader of its own session and process group."""

    def __init__(self, popen: subprocess.Popen[bytes], loop: asyncio.AbstractEventLoop) -> None:
        self._popen = popen
        self._loop = loop
        self.pid = popen.pid
        self.exited: asyncio.Future[ExitStatus] = loop.create_future()
        """Resolves with the exit status as soon as the kernel reports the exit (reaped)."""
        self._watch = ExitWatch(popen.pid, self._on_exit, loop)

    def _on_exit(self) -> None:
        returncode = self._popen.wait()  # it has exited: this reaps at once
        if not self.exited.done():
            self.exited.set_result(ExitStatus.from_returncode(returncode))

    def signal_group(self, signum: int) -> None:
        """Send `signum` to every process in the worker's group; a gone group is not an error."""
        signal_group(self.pid, signum)

    def kill_group(self) -> None:
        """SIGKILL the whole group: the worker and every child it left in it."""
        self.signal_group(signal.SIGKILL)


def launch(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: Path | None = None,
    loop: asyncio.AbstractEventLoop | None = None,
    preexec_fn: Callable[[], None] | None = None,
    pass_fds: Sequence[int] = (),
) -> WorkerProcess:
    """Start `argv` in a new session (its own process group) and watch it through a pidfd.

    `preexec_fn` runs in the child before exec (a worker's own child passes
    `forge.ipc.orphans.die_with_parent`, so it dies with the worker); `pass_fds` stay open in
    the child (a lending pair's worker end)."""
    popen = subprocess.Popen(
        list(argv),
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        pass_fds=pass_fds,
        preexec_fn=preexec_fn,
    )
    return WorkerProcess(popen, loop or asyncio.get_running_loop())
