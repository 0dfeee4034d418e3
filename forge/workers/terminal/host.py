"""The terminal host worker: one process per terminal, on the shared `forge.ipc` worker base.

It owns one `PtySession` (the shell), the screen model (`ScreenFeeder`) and the state words
(`StateDetector`). Everything the supervisor relays leaves on ONE ordered bulk stream, `output`:
kind-4 frames in final wire form (meta None), and summaries (meta `{"summary": {...}}`, empty
payload) whenever the strip's words change. One stream keeps the order a viewer needs: the last
bytes of a shell always arrive before the summary that says it exited.

Requests: `view` (screen snapshot and the seq it reflects), `resize`, `flow` (the controller's
backpressure, and muting frames while no viewer takes them), `close` (kill the shell's session,
then the worker stops), `summary`, `stats`.
Keystrokes arrive on the supervisor's bulk stream `input`, one-way, for the lowest latency.
"""

from __future__ import annotations

import asyncio
from collections import deque
from pathlib import Path
from typing import Any

from forge.ipc.errors import RequestFailed, WorkerConfigError
from forge.ipc.messages import Request, StreamFrame
from forge.ipc.worker import Worker, handles
from forge.workers.terminal.batcher import Frame
from forge.workers.terminal.feeder import ScreenFeeder
from forge.workers.terminal.render import render_screen
from forge.workers.terminal.screen import TerminalScreen
from forge.workers.terminal.session import PtySession, ShellSpec, ShellUnavailable
from forge.workers.terminal.state import StateDetector

OUTPUT_STREAM = "output"
INPUT_STREAM = "input"

COLS_RANGE = range(2, 501)
ROWS_RANGE = range(1, 301)
"""O-TM4: sizes a PTY may take; the supervisor refuses others before asking."""

PROBE_INTERVAL = 0.1
"""Seconds between looks at the foreground group, termios and cwd (the state words' latency)."""
FEED_QUIET = 0.05
"""The screen model is fed only after output was quiet this long: during a flood its parse
would be thrown away by the next skip, and would take CPU from the bytes viewers are waiting on."""
FEED_SLICE = 4096
"""Bytes parsed per turn of the loop while feeding (about 4-13 ms of pyte)."""
SEND_HIGH = 1024 * 1024
SEND_LOW = 256 * 1024
"""Unsent bytes towards the supervisor above which the PTY is not read, and below which it is
read again: a stalled supervisor blocks the shell instead of growing this process."""


class TerminalHost(Worker):
    """Config: `terminal` (wire id), `cwd`, and `shell` or `argv`, optional `cols` and `rows`."""

    kind = "terminal"

    async def setup(self) -> None:
        config = self.config
        try:
            terminal = int(config["terminal"])
            cwd = Path(str(config["cwd"]))
            cols, rows = int(config.get("cols", 80)), int(config.get("rows", 24))
        except (KeyError, ValueError) as error:
            raise WorkerConfigError(f"terminal host config is incomplete: {error}") from error
        argv = config.get("argv")
        spec = ShellSpec.login_shell(
            cwd,
            cols,
            rows,
            shell=config.get("shell"),
            argv=tuple(str(word) for word in argv) if argv else None,
        )
        self.terminal = terminal
        self.feeder = ScreenFeeder(TerminalScreen(cols, rows))
        self.detector = StateDetector()
        self._out = self.stream(OUTPUT_STREAM)
        self._queue: deque[tuple[bytes, Any]] = deque()
        self._queued_bytes = 0
        self._queued = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()  # nothing queued yet
        self._last_output = self.clock.monotonic()
        self._output_arrived = asyncio.Event()
        self._sent_summary: dict[str, Any] | None = None
        self._muted = False
        self._mute_epoch = 0
        try:
            self.session = await PtySession.start(
                spec, terminal, self._on_frames, self._on_exit, self.clock
            )
        except ShellUnavailable as error:
            raise WorkerConfigError(str(error)) from error
        self.log.info("terminal_started", terminal=terminal, pid=self.session.pid, argv=spec.argv)
        self.spawn(self._send_loop())
        self.spawn(self._feed_loop())
        self.spawn(self._probe_loop())
        self._push_summary()

    async def teardown(self) -> None:
        if self.session.alive:
            await self.session.close()

    # --- output ---------------------------------------------------------------------------

    def _on_frames(self, frames: list[Frame]) -> None:
        changed = False
        for frame in frames:
            if not self._muted:
                self._enqueue(frame.wire, None)
            self.feeder.append(frame.seq, frame.data)
            changed = self.detector.scan(frame.data) or changed
        self._last_output = self.clock.monotonic()
        self._output_arrived.set()
        if changed:
            self._push_summary()

    def _on_exit(self, status: int) -> None:
        self.detector.exited(status)
        self._push_summary()

    def _enqueue(self, payload: bytes, meta: Any) -> None:
        """Send now when nothing waits and the supervisor has room (a flood's usual case, with no
        task switch per frame); otherwise queue behind what waits, in order."""
        if not self._queue and self._out.send_now(payload, meta):
            return
        self._queue.append((payload, meta))
        self._queued_bytes += len(payload)
        self._queued.set()
        self._drained.clear()
        if self._queued_bytes > SEND_HIGH:
            self.session.pause_reading("ipc")

    async def _send_loop(self) -> None:
        while True:
            await self._queued.wait()
            while self._queue:
                payload, meta = self._queue[0]  # left queued while in flight: order holds
                await self._out.send(payload, meta)
                self._queue.popleft()
                self._queued_bytes -= len(payload)
                if self._queued_bytes < SEND_LOW:
                    self.session.resume_reading("ipc")
            self._queued.clear()
            self._drained.set()

    # --- the screen model and the state words ----------------------------------------------

    async def _feed_loop(self) -> None:
        while True:
            await self._output_arrived.wait()
            self._output_arrived.clear()
            while self.feeder.pending:
                quiet_for = self.clock.monotonic() - self._last_output
                if quiet_for < FEED_QUIET:
                    await self.clock.sleep(FEED_QUIET - quiet_for)
                    continue
                self.feeder.feed(FEED_SLICE)
                await asyncio.sleep(0)

    async def _probe_loop(self) -> None:
        while True:
            await self.clock.sleep(PROBE_INTERVAL)
            probe = self.session.probe()
            if probe is not None:
                self.detector.observe(probe)
            self._push_summary()

    def summary(self) -> dict[str, Any]:
        """O-TM5's summary, plus `pid` (a fresh shell is told apart) and `exit_status`."""
        state, source, title, exit_status = self.detector.summary()
        session = self.session
        return {
            "id": self.terminal,
            "shell": session.spec.argv[0],
            "pid": session.pid,
            "cwd": session.cwd() if session.alive else str(session.spec.cwd),
            "cols": session.cols,
            "rows": session.rows,
            "alive": session.alive,
            "state": state.value,
            "source": source.value,
            "title": title,
            "held": False,
            "exit_status": exit_status,
        }

    def _push_summary(self) -> None:
        """Queue the summary behind the output it follows, if it differs from the last one sent."""
        summary = self.summary()
        if summary != self._sent_summary:
            self._sent_summary = summary
            self._enqueue(b"", {"summary": summary})

    # --- requests ---------------------------------------------------------------------------

    @handles("view")
    async def view(self, request: Request) -> dict[str, Any]:
        """The screen as a VT stream and the last seq it reflects (later frames follow it)."""
        seq = self.feeder.catch_up()
        screen = self.feeder.screen
        return {
            "seq": seq,
            "screen": render_screen(screen),
            "cols": screen.columns,
            "rows": screen.lines,
        }

    @handles("resize")
    async def resize(self, request: Request) -> dict[str, Any]:
        args = request.args if isinstance(request.args, dict) else {}
        cols, rows = args.get("cols"), args.get("rows")
        if not (isinstance(cols, int) and cols in COLS_RANGE):
            raise RequestFailed("bad_size", f"cols must be 2..500, got {cols!r}")
        if not (isinstance(rows, int) and rows in ROWS_RANGE):
            raise RequestFailed("bad_size", f"rows must be 1..300, got {rows!r}")
        self.feeder.resize(cols, rows)
        self.session.resize(cols, rows)
        self._push_summary()
        return {"cols": cols, "rows": rows}

    @handles("flow")
    async def flow(self, request: Request) -> dict[str, Any]:
        """The supervisor's flow decisions, each optional.

        `paused` is the controller's backpressure: true stops reading the PTY. `muted` with its
        `epoch` says whether any viewer takes frames live: while none does, frames are not sent
        (the shell runs on, the screen model still follows, and a viewer that comes back is
        drawn a fresh view first). A decision older than the last one applied is ignored, so
        two requests overtaking each other cannot leave a live viewer muted.
        """
        args = request.args if isinstance(request.args, dict) else {}
        paused = args.get("paused")
        if paused is True:
            self.session.pause_reading("controller")
        elif paused is False:
            self.session.resume_reading("controller")
        muted, epoch = args.get("muted"), args.get("epoch")
        if isinstance(muted, bool) and isinstance(epoch, int) and epoch > self._mute_epoch:
            self._muted, self._mute_epoch = muted, epoch
        return {"paused": sorted(self.session.paused), "muted": self._muted}

    @handles("close")
    async def close(self, request: Request) -> dict[str, Any]:
        """Kill the shell's session; answers once its last bytes and summary were sent.

        The supervisor stops the worker after this answer (it owns the lifecycle).
        """
        status = await self.session.close()
        await self._drained.wait()
        return {"exit_status": status}

    @handles("summary")
    async def get_summary(self, request: Request) -> dict[str, Any]:
        return self.summary()

    @handles("stats")
    async def stats(self, request: Request) -> dict[str, Any]:
        """Counters for benchmarks and diagnosis."""
        return {
            "seq": self.session.seq,
            "unread": self.session.unread(),
            "unsent": self._queued_bytes,
            "paused": sorted(self.session.paused),
            "muted": self._muted,
            "screen_pending": self.feeder.pending,
            "screen_skipped": self.feeder.skipped_bytes,
        }

    async def on_bulk(self, frame: StreamFrame) -> None:
        if frame.stream_id == INPUT_STREAM:
            self.session.write(bytes(frame.payload))
