"""Starting Debian's Chromium for one profile and knowing when it dies.

Why `--remote-debugging-pipe` and not `--remote-debugging-port=0`: a debugging port on 127.0.0.1
hands a signed-in browser to every local user and process that finds it, while the pipe is
reachable only through the two descriptors this host holds. It also ties Chromium's life to ours:
when the host dies its pipe end closes and Chromium exits on the EOF (measured ~0.2 s), so no
orphan browser keeps a profile locked. The pipe is spawned with `posix_spawn` file actions
(thread-safe, unlike `preexec_fn`) that put Chromium's ends on descriptors 3 and 4.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge.children import ExitWatch
from forge.clock import SYSTEM_CLOCK, Clock
from forge.logs import get_logger
from forge.workers.browser.errors import BrowserGone
from forge.workers.browser.protocol import NO_SANDBOX, check_executable, sandbox_off
from forge.workers.browser.transport import CdpConnection, EventHandler

log = get_logger(__name__)

CHROMIUM_FLAGS = (
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--password-store=basic",
    "--remote-debugging-pipe",
)
"""The flags measured to work here (the browser issue), plus the debugging pipe; `--no-sandbox`
only as root (`chromium_argv`)."""

LAUNCH_TIMEOUT_S = 30.0
"""How long Chromium may take to answer its first command before the launch is a failure."""

STOP_GRACE_S = 1.0
"""After closing the pipe, how long Chromium gets to exit before SIGKILL (it takes ~0.2 s);
inside the worker lifecycle's 2 s stop bound."""


@dataclass(frozen=True)
class LaunchSettings:
    """Which Chromium, and where the profile lives (sign-ins persist in `user_data_dir`)."""

    executable: Path
    user_data_dir: Path
    extra_args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    """Set on top of the host's environment (the profile's `PULSE_SERVER`, `PULSE_SINK`)."""


def chromium_argv(settings: LaunchSettings, euid: int) -> list[str]:
    """The command line for `settings`, run as user `euid`: Chromium keeps its own sandbox
    unless that is root (`sandbox_off`)."""
    return [
        str(settings.executable),
        *CHROMIUM_FLAGS,
        *([NO_SANDBOX] if sandbox_off(euid) else []),
        f"--user-data-dir={settings.user_data_dir}",
        *settings.extra_args,
    ]


def _high_fd(fd: int) -> int:
    """A close-on-exec copy above 9, so the spawn's dup2 onto 3 and 4 cannot clobber a source."""
    copy = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return copy


def _spawn(
    argv: list[str], env: Mapping[str, str], log_fd: int, command_fd: int, reply_fd: int
) -> int:
    """Start Chromium with its pipe ends on 3 (commands in) and 4 (replies out), output logged."""
    return os.posix_spawn(
        argv[0],
        argv,
        {**os.environ, **env},
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, log_fd, 1),
            (os.POSIX_SPAWN_DUP2, log_fd, 2),
            (os.POSIX_SPAWN_DUP2, command_fd, 3),
            (os.POSIX_SPAWN_DUP2, reply_fd, 4),
        ],
    )


def exit_reason(status: int) -> str:
    """A waitpid status in words a person reads on a failed surface."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        return f"Chromium was killed by signal {number} ({signal.Signals(number).name})"
    return f"Chromium exited with status {os.waitstatus_to_exitcode(status)}"


class ChromiumProcess:
    """A running Chromium with its CDP connection; `exited` resolves with the reason it stopped."""

    def __init__(self, pid: int, connection: CdpConnection, log_path: Path) -> None:
        self.pid = pid
        self.connection = connection
        self.log_path = log_path
        loop = asyncio.get_running_loop()
        self.exited: asyncio.Future[str] = loop.create_future()
        self._watch = ExitWatch(pid, self._reap, loop)

    @classmethod
    async def launch(
        cls, settings: LaunchSettings, on_event: EventHandler, clock: Clock = SYSTEM_CLOCK
    ) -> ChromiumProcess:
        """Spawn Chromium and wait until it answers; a missing binary raises `BrowserMissing`."""
        check_executable(settings.executable)
        settings.user_data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        log_path = settings.user_data_dir / "chromium.log"
        to_chromium_r, to_chromium_w = (_high_fd(fd) for fd in os.pipe())
        from_chromium_r, from_chromium_w = (_high_fd(fd) for fd in os.pipe())
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        argv = chromium_argv(settings, os.geteuid())
        try:
            pid = _spawn(argv, settings.env, log_fd, to_chromium_r, from_chromium_w)
        finally:
            for fd in (log_fd, to_chromium_r, from_chromium_w):
                os.close(fd)
        connection = CdpConnection(on_event)
        await connection.open(from_chromium_r, to_chromium_w)
        process = cls(pid, connection, log_path)
        log.info(
            "browser_chromium_started",
            pid=pid,
            profile_dir=str(settings.user_data_dir),
            sandbox=NO_SANDBOX not in argv,
        )
        await process._until_ready(clock)
        return process

    async def _until_ready(self, clock: Clock) -> None:
        ready = asyncio.ensure_future(self.connection.call("Browser.getVersion"))
        deadline = asyncio.ensure_future(clock.sleep(LAUNCH_TIMEOUT_S))
        racers: set[asyncio.Future[Any]] = {ready, deadline, self.exited}
        await asyncio.wait(racers, return_when=asyncio.FIRST_COMPLETED)
        deadline.cancel()
        if ready.done() and ready.exception() is None:
            return
        ready.cancel()
        reason = (
            self.exited.result()
            if self.exited.done()
            else f"Chromium did not answer within {LAUNCH_TIMEOUT_S:g} s"
        )
        await self.stop(clock)
        raise BrowserGone(f"{reason} while starting; see {self.log_path}")

    def _reap(self) -> None:
        _, status = os.waitpid(self.pid, 0)
        reason = exit_reason(status)
        log.info("browser_chromium_exited", pid=self.pid, reason=reason)
        self.connection.close()
        if not self.exited.done():
            self.exited.set_result(reason)

    async def stop(self, clock: Clock = SYSTEM_CLOCK) -> None:
        """Close the pipe (Chromium quits on EOF); SIGKILL it if it lingers past the grace."""
        self.connection.close()
        if self.exited.done():
            return
        grace = asyncio.ensure_future(clock.sleep(STOP_GRACE_S))
        racers: set[asyncio.Future[Any]] = {grace, self.exited}
        await asyncio.wait(racers, return_when=asyncio.FIRST_COMPLETED)
        grace.cancel()
        if not self.exited.done():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            await asyncio.shield(self.exited)
