"""One PTY running one shell, read on a thread of its own and framed by `OutputBatcher`.

The reader thread waits on the PTY with `poll`, drains it until it would block, feeds the batcher
and hands the frames it releases to the event loop (`on_frames` runs there). A thread, because
a PTY hands out at most ~4 KiB per read: a flood is ~250 reads per MB, and each turn of the
event loop around a read cost more than the read itself (measured in docs/benchmarks.md). The
loop keeps everything else: sizes, probes, and the shell's exit, seen through a pidfd (the
keystrokes are written to `master_fd` by the supervisor, `forge.ptyinput`); the thread then
drains the PTY once more, so every byte the shell wrote is framed before `on_exit` runs.
Reading can be paused for backpressure (`pause_reading(reason)`) without losing that final
drain. A shell's jobs do not outlive it: once the shell is gone, what is left of its session
(`sleep 777 &`, a server started in the background) is killed as `close` kills it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import select
import signal
import termios
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ptyprocess import PtyProcess

from forge import procs
from forge.children import ExitWatch, signal_group
from forge.clock import SYSTEM_CLOCK, Clock
from forge.errors import UserError
from forge.logs import get_logger
from forge.workers.terminal.batcher import Frame, OutputBatcher
from forge.workers.terminal.state import Probe

READ_SIZE = 64 * 1024
"""Bytes asked of one `os.read` (Linux returns at most what the line discipline holds)."""
WAKEUP_LIMIT = 256 * 1024
"""Bytes read in one wakeup before the reader looks at its wake pipe and the batch deadline
again, so a flood cannot hold off a pause, a final drain or a stop."""
READER_FAILED_EXIT = 70
"""The host's exit status when its reader thread fails (EX_SOFTWARE: a bug, not the shell)."""
CLOSE_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL when a terminal is closed (an interactive shell ignores
SIGTERM, so this is how long its jobs get to leave cleanly)."""

log = get_logger(__name__)


class ShellUnavailable(UserError):
    """The configured shell or directory cannot start a terminal."""


@dataclass(frozen=True, slots=True)
class ShellSpec:
    """What to run: argv, directory, size and environment."""

    argv: tuple[str, ...]
    cwd: Path
    cols: int = 80
    rows: int = 24
    env: Mapping[str, str] | None = None

    @classmethod
    def login_shell(
        cls,
        cwd: Path,
        cols: int = 80,
        rows: int = 24,
        *,
        shell: str | None = None,
        argv: tuple[str, ...] | None = None,
    ) -> ShellSpec:
        """`shell -l`, else `$SHELL -l`, else `/bin/sh -l` (O-TM8), with TERM=xterm-256color.

        `argv` replaces the login shell with an exact command (tests, benchmarks).
        """
        program = shell or os.environ.get("SHELL") or "/bin/sh"
        env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor"}
        return cls(argv or (program, "-l"), cwd, cols, rows, env)


class PtySession:
    """A running shell on a PTY. Create with `start`; `closed` resolves after `on_exit` ran."""

    def __init__(
        self,
        spec: ShellSpec,
        process: PtyProcess,
        batcher: OutputBatcher,
        on_frames: Callable[[list[Frame]], None],
        on_exit: Callable[[int], None],
        clock: Clock,
    ) -> None:
        self.spec = spec
        self.cols, self.rows = spec.cols, spec.rows
        self._process = process
        self._fd: int = process.fd
        self._batcher = batcher
        self._on_frames = on_frames
        self._on_exit = on_exit
        self._clock = clock
        self._loop = asyncio.get_running_loop()
        self._pause_reasons: set[str] = set()
        self._reading = True
        """Whether the reader thread may read; it looks before every read."""
        self._eof = False
        self._final_drain = False
        self._stopping = False
        self._released = False
        self._closing = False
        self._leftovers: asyncio.Task[list[int]] | None = None
        """Killing what the shell left in its session, from its exit on."""
        self.exit_status: int | None = None
        self.closed: asyncio.Future[int] = self._loop.create_future()
        os.set_blocking(self._fd, False)
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._reader = threading.Thread(
            target=self._read_or_die, name=f"pty-{process.pid}", daemon=True
        )
        self._reader.start()
        self._exit_watch = ExitWatch(process.pid, self._shell_exited, self._loop)

    @classmethod
    async def start(
        cls,
        spec: ShellSpec,
        terminal: int,
        on_frames: Callable[[list[Frame]], None],
        on_exit: Callable[[int], None],
        clock: Clock = SYSTEM_CLOCK,
    ) -> PtySession:
        if not spec.cwd.is_dir():
            raise ShellUnavailable(f"terminal directory {spec.cwd} does not exist")
        try:
            process = PtyProcess.spawn(
                list(spec.argv),
                cwd=str(spec.cwd),
                env=dict(spec.env) if spec.env is not None else None,
                dimensions=(spec.rows, spec.cols),
            )
        except OSError as error:
            raise ShellUnavailable(f"cannot start shell {spec.argv[0]!r}: {error}") from error
        return cls(spec, process, OutputBatcher(terminal), on_frames, on_exit, clock)

    @property
    def pid(self) -> int:
        return int(self._process.pid)

    @property
    def master_fd(self) -> int:
        """The PTY's master: the host reads it; keystrokes are written to it by whoever the
        host lent it to (the supervisor), never through the host."""
        return self._fd

    @property
    def alive(self) -> bool:
        return self.exit_status is None

    @property
    def seq(self) -> int:
        """The last frame handed to `on_frames`."""
        return self._batcher.seq

    # --- output (the reader thread) ----------------------------------------------------

    def _read_or_die(self) -> None:
        """A reader that fails would freeze the terminal without a word: the host dies instead,
        which the supervisor reports to every viewer as a host crash."""
        try:
            self._read_forever()
        except BaseException:
            log.exception("terminal_reader_failed", pid=self.pid)
            os._exit(READER_FAILED_EXIT)

    def _read_forever(self) -> None:
        poller = select.poll()
        poller.register(self._wake_read, select.POLLIN)
        watching = False
        while not self._stopping:
            wanted = self._reading and not self._eof
            if wanted != watching:
                if wanted:
                    poller.register(self._fd, select.POLLIN)
                else:
                    poller.unregister(self._fd)
                watching = wanted
            deadline = self._batcher.deadline()
            timeout = None if deadline is None else max(0.0, deadline - self._clock.monotonic())
            for fd, _ in poller.poll(None if timeout is None else timeout * 1000):
                if fd == self._wake_read:
                    self._woken()
                elif self._reading:
                    self._hand_over(self._drain(WAKEUP_LIMIT))
            self._hand_over(self._batcher.expire(self._clock.monotonic()))

    def _drain(self, limit: int | None) -> list[Frame]:
        """Read until the PTY would block (or `limit` bytes); the frames the batcher released."""
        total = 0
        frames: list[Frame] = []
        while limit is None or total < limit:
            try:
                data = os.read(self._fd, READ_SIZE)
            except BlockingIOError:
                frames += self._batcher.drained(self._clock.monotonic())
                break
            except OSError:  # EIO: no process holds the PTY's other side any more
                data = b""
            if not data:
                self._eof = True
                frames += self._batcher.flush(self._clock.monotonic())
                break
            total += len(data)
            frames += self._batcher.push(data, self._clock.monotonic())
            if limit is not None and not self._reading:
                break
        return frames

    def _woken(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.read(self._wake_read, 64)
        if self._final_drain:
            self._final_drain = False
            frames = [] if self._eof else self._drain(None)
            self._hand_over(frames + self._batcher.flush(self._clock.monotonic()))
            self._call(self._report_exit)

    def _hand_over(self, frames: list[Frame]) -> None:
        if frames:
            self._call(self._on_frames, frames)

    def _call(self, callback: Callable[..., None], *args: object) -> None:
        try:
            self._loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the loop is closed: nobody is left to hand frames to
            self._stopping = True

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_write, b"\0")

    # --- backpressure -------------------------------------------------------------------

    def pause_reading(self, reason: str) -> None:
        """Stop reading the PTY until every reason given is withdrawn (the shell then blocks).

        At most the read already in progress on the reader thread completes after this.
        """
        self._pause_reasons.add(reason)
        self._reading = False
        self._wake()

    def resume_reading(self, reason: str) -> None:
        if reason not in self._pause_reasons:
            return
        self._pause_reasons.discard(reason)
        if not self._pause_reasons:
            self._reading = True
            self._wake()

    @property
    def paused(self) -> frozenset[str]:
        return frozenset(self._pause_reasons)

    def unread(self) -> int:
        """Bytes the shell wrote that wait in the PTY (what backpressure holds back)."""
        if self._eof:
            return 0
        try:
            answer = fcntl.ioctl(self._fd, termios.FIONREAD, b"\0\0\0\0")
        except OSError:
            return 0
        return int.from_bytes(answer, "little")

    # --- size, probes ------------------------------------------------------------

    def resize(self, cols: int, rows: int) -> None:
        """Set the PTY's size; the kernel sends SIGWINCH to the foreground group."""
        self.cols, self.rows = cols, rows
        if self.alive:
            with contextlib.suppress(OSError):
                self._process.setwinsize(rows, cols)

    def probe(self) -> Probe | None:
        """Who holds the foreground and how the line discipline is set; None once exited."""
        if not self.alive:
            return None
        try:
            foreground: int | None = os.tcgetpgrp(self._fd)
            lflag = termios.tcgetattr(self._fd)[3]
        except OSError:
            return None
        if foreground is not None and foreground <= 0:
            foreground = None
        return Probe(
            foreground_pgid=foreground,
            shell_pgid=self.pid,
            echo=bool(lflag & termios.ECHO),
            canonical=bool(lflag & termios.ICANON),
        )

    def cwd(self) -> str:
        """The shell's working directory now (it follows `cd`), else where it started."""
        try:
            return os.readlink(f"/proc/{self.pid}/cwd")
        except OSError:
            return str(self.spec.cwd)

    # --- exit and close -----------------------------------------------------------------

    def _shell_exited(self) -> None:
        """The shell is gone: everything it wrote is in the PTY now; the reader drains it, then
        `_report_exit` reaps and reports (in that order: both go through the loop's queue).

        Its session is looked up now, while the unreaped shell still holds its pid (the
        session's id), and what is left in it is killed: a background job must not outlive its
        terminal, reparented to init with nothing owning it.
        """
        if not self._closing:
            leftovers = self._session_members() - {self.pid}
            if leftovers:
                log.info("terminal_jobs_left", pid=self.pid, jobs=sorted(leftovers))
                self._leftovers = self._loop.create_task(self._kill(leftovers))
        self._final_drain = True
        self._wake()

    def _report_exit(self) -> None:
        self._process.wait()
        status = self._process.exitstatus
        if status is None:
            status = 128 + int(self._process.signalstatus or 0)
        self.exit_status = int(status)
        log.info("terminal_shell_exited", pid=self.pid, status=self.exit_status)
        self._on_exit(self.exit_status)
        if not self.closed.done():
            self.closed.set_result(self.exit_status)

    async def close(self) -> int:
        """Kill the shell with its process group, its jobs and their session; returns the status
        once the shell and whatever it left in its session are gone."""
        if self.alive and not self._closing:
            self._closing = True
            members = self._session_members()
            signal_group(self.pid, signal.SIGHUP)
            await self._kill(members)
        status = await self.closed
        if self._leftovers is not None:
            await self._leftovers
        self._release()
        return status

    def _session_members(self) -> set[int]:
        """Every process of the shell's session (it leads one), and their descendants."""
        roots = procs.ProcessWalker().session(self.pid)
        return {process.pid for root in roots for process in root.walk()}

    async def _kill(self, pids: set[int]) -> list[int]:
        return await procs.kill_processes(pids, grace_s=CLOSE_GRACE, clock=self._clock)

    def _release(self) -> None:
        if self._released:  # two closes awaited together: the second finds it done
            return
        self._released = True
        self._stopping = True
        self._wake()
        self._reader.join()
        os.close(self._wake_read)
        os.close(self._wake_write)
        self._process.close(force=True)
