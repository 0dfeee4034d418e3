"""The terminal host worker: one process per terminal, on the shared `forge.ipc` worker base.

It owns one `PtySession` (the shell), the screen model (`ScreenFeeder` feeding a `ScreenModel`,
xterm.js in a node process) and the state words (`StateDetector`), and answers the requests of
`forge.workers.terminal.protocol`. Everything the supervisor relays leaves on ONE ordered bulk
stream, `output` (see the protocol for its meta).
"""

from __future__ import annotations

import asyncio
from collections import deque
from pathlib import Path
from typing import Any

import msgspec

from forge.ipc.errors import WorkerConfigError
from forge.ipc.worker import Worker, handles
from forge.wire.terminal import TerminalSummary
from forge.workers.terminal.batcher import Frame
from forge.workers.terminal.feeder import ScreenFeeder
from forge.workers.terminal.flow import MuteGate, ParseWindow, Reading, SendWindow
from forge.workers.terminal.model import NodeMissing, ScreenModel, ScreenModelFailed
from forge.workers.terminal.protocol import (
    OUTPUT_STREAM,
    TERMINAL,
    Close,
    Closed,
    Flow,
    FlowState,
    HostConfig,
    HostStats,
    Resize,
    Resized,
    Stats,
    Summary,
    View,
    Viewed,
    summary_meta,
)
from forge.workers.terminal.session import PtySession, ShellSpec, ShellUnavailable
from forge.workers.terminal.state import StateDetector

PROBE_INTERVAL = 0.1
"""Seconds between looks at the foreground group, termios and cwd (the state words' latency)."""
FEED_QUIET = 0.05
"""The screen model is fed only after output was quiet this long: during a flood its parse
would be thrown away by the next skip, and would take CPU from the bytes viewers are waiting on."""
FEED_SLICE = 64 * 1024
"""Bytes handed to the model per turn of the loop while feeding (a pipe write; xterm.js parses
them in its own process in about 1-10 ms)."""

IPC = "ipc"
CONTROLLER = "controller"
UNPARSED = "unparsed"
"""The reasons the PTY's reading is paused: the host's own send queue, the supervisor's word,
the controller's page behind in its parse."""
VIEW_TRIES = 3
"""Models a view is asked of before the request fails (each one that dies is rebuilt)."""


class TerminalHost(Worker):
    """Config: `HostConfig`."""

    kind = TERMINAL.kind

    async def setup(self) -> None:
        try:
            config = msgspec.convert(dict(self.config), HostConfig, strict=False)
        except msgspec.ValidationError as error:
            raise WorkerConfigError(f"terminal host config: {error}") from error
        spec = ShellSpec.login_shell(
            Path(config.cwd),
            config.cols,
            config.rows,
            shell=config.shell,
            argv=tuple(config.argv) if config.argv else None,
        )
        self.terminal = config.terminal
        try:
            model = await ScreenModel.start(config.cols, config.rows)
        except NodeMissing as error:
            raise WorkerConfigError(str(error)) from error
        model.on_failed = self._model_failed
        self.feeder = ScreenFeeder(model)
        self._rebuilding: asyncio.Task[None] | None = None
        self.detector = StateDetector()
        self._out = self.stream(OUTPUT_STREAM)
        self._queue: deque[tuple[bytes, Any]] = deque()
        self._window = SendWindow()
        self._parse = ParseWindow()
        self._queued = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()  # nothing queued yet
        self._last_output = self.clock.monotonic()
        self._output_arrived = asyncio.Event()
        self._sent_summary: TerminalSummary | None = None
        self._mute = MuteGate()
        try:
            self.session = await PtySession.start(
                spec, self.terminal, self._on_frames, self._on_exit, self.clock
            )
        except ShellUnavailable as error:
            raise WorkerConfigError(str(error)) from error
        self.lend(self.session.master_fd)  # keystrokes come straight from the supervisor
        self.log.info(
            "terminal_started", terminal=self.terminal, pid=self.session.pid, argv=spec.argv
        )
        self.spawn(self._send_loop())
        self.spawn(self._feed_loop())
        self.spawn(self._probe_loop())
        self._push_summary()

    async def teardown(self) -> None:
        if self.session.alive:
            await self.session.close()
        await self.feeder.model.close()

    # --- output ---------------------------------------------------------------------------

    def _on_frames(self, frames: list[Frame]) -> None:
        changed = False
        for frame in frames:
            if not self._mute.muted:
                self._enqueue(frame.wire, frame.seq)
                self._apply(self._parse.sent(frame.seq, len(frame.data)), UNPARSED)
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
        self._queued.set()
        self._drained.clear()
        self._apply(self._window.queued(len(payload)), IPC)

    async def _send_loop(self) -> None:
        while True:
            await self._queued.wait()
            while self._queue:
                payload, meta = self._queue[0]  # left queued while in flight: order holds
                await self._out.send(payload, meta)
                self._queue.popleft()
                self._apply(self._window.sent(len(payload)), IPC)
            self._queued.clear()
            self._drained.set()

    def _apply(self, reading: Reading | None, reason: str) -> None:
        if reading is Reading.PAUSE:
            self.session.pause_reading(reason)
        elif reading is Reading.RESUME:
            self.session.resume_reading(reason)

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
                await self.feeder.model.drain()

    def _model_failed(self) -> None:
        """The model died: a new one is built at once from what it kept, so the next viewer
        is drawn the screen it would have been drawn."""
        if self._rebuilding is None or self._rebuilding.done():
            self._rebuilding = self.spawn(self._rebuild())

    async def _rebuild(self) -> None:
        old = self.feeder.model
        replay = not old.replaying  # a rebuilt model that died on its replay starts blank
        self.log.warning("terminal_screen_model_failed", reason=old.failed, replay=replay)
        try:
            model = await old.rebuilt(replay=replay)
        except OSError as error:
            self.log.error("terminal_screen_model_unstarted", reason=str(error))
            return
        model.on_failed = self._model_failed
        self.feeder.replace(model)
        await old.close()

    async def _probe_loop(self) -> None:
        while True:
            await self.clock.sleep(PROBE_INTERVAL)
            probe = self.session.probe()
            if probe is not None:
                self.detector.observe(probe)
            self._push_summary()

    def summary(self) -> TerminalSummary:
        """O-TM5's summary, plus `pid` (a fresh shell is told apart) and `exit_status`."""
        state, source, title, exit_status = self.detector.summary()
        session = self.session
        return TerminalSummary(
            id=self.terminal,
            shell=session.spec.argv[0],
            pid=session.pid,
            cwd=session.cwd() if session.alive else str(session.spec.cwd),
            cols=session.cols,
            rows=session.rows,
            alive=session.alive,
            state=state.value,
            source=source.value,
            title=title,
            held=False,
            exit_status=exit_status,
        )

    def _push_summary(self) -> None:
        """Queue the summary behind the output it follows, if it differs from the last one sent."""
        summary = self.summary()
        if summary != self._sent_summary:
            self._sent_summary = summary
            self._enqueue(b"", summary_meta(summary))

    # --- requests ---------------------------------------------------------------------------

    @handles(View)
    async def view(self, request: View) -> Viewed:
        """The screen as a VT stream and the last seq it reflects (later frames follow it).

        A model that died is rebuilt (`_rebuild`) and asked again; the shell never waits on it.
        """
        why = "no model was asked"
        for _ in range(VIEW_TRIES):
            model = self.feeder.model
            seq = self.feeder.catch_up()
            try:
                screen = await model.view()  # asked before anything else is written to the model
            except ScreenModelFailed as error:
                why = str(error)
                if self.feeder.model is model:
                    self._model_failed()  # unless a rebuild is under way already
                    assert self._rebuilding is not None
                    await asyncio.shield(self._rebuilding)
                continue
            return Viewed(seq=seq, screen=screen, cols=model.cols, rows=model.rows)
        raise ScreenModelFailed(
            f"the terminal's screen model failed {VIEW_TRIES} times in a row, its shell runs "
            f"on: {why}"
        )

    @handles(Resize)
    async def resize(self, request: Resize) -> Resized:
        self.feeder.resize(request.cols, request.rows)
        self.session.resize(request.cols, request.rows)
        self._push_summary()
        return Resized(cols=request.cols, rows=request.rows)

    @handles(Flow)
    async def flow(self, request: Flow) -> FlowState:
        """The supervisor's decisions: the controller's backpressure, its page's parse (paced),
        and whether any viewer takes frames live (muted, the shell runs on and the screen model
        still follows; a viewer that comes back is drawn a fresh view first)."""
        if request.paused is True:
            self.session.pause_reading(CONTROLLER)
        elif request.paused is False:
            self.session.resume_reading(CONTROLLER)
        if request.muted is not None:
            self._mute.decide(request.muted, request.epoch)
        self._apply(self._parse.decide(request.paced, request.parsed, request.pace_epoch), UNPARSED)
        return FlowState(paused=sorted(self.session.paused), muted=self._mute.muted)

    @handles(Close)
    async def close(self, request: Close) -> Closed:
        """Kill the shell's session; answers once its last bytes and summary were sent.

        The supervisor stops the worker after this answer (it owns the lifecycle).
        """
        status = await self.session.close()
        await self._drained.wait()
        return Closed(exit_status=status)

    @handles(Summary)
    async def get_summary(self, request: Summary) -> TerminalSummary:
        return self.summary()

    @handles(Stats)
    async def stats(self, request: Stats) -> HostStats:
        return HostStats(
            seq=self.session.seq,
            unread=self.session.unread(),
            unsent=self._window.unsent,
            paused=sorted(self.session.paused),
            muted=self._mute.muted,
            screen_pending=self.feeder.pending,
            screen_skipped=self.feeder.skipped_bytes,
        )
