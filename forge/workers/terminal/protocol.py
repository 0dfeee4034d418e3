"""The terminal host's protocol: what the supervisor asks one terminal's host, and what it gets.

The supervisor imports this module and nothing else of `forge.workers.terminal`.

- Config (`HostConfig`): the terminal's wire id, its directory, and the shell (`shell`, or an
  exact `argv` for tests and benchmarks), with an optional first size.
- Requests: `View` (the screen as a VT stream and the seq it reflects), `Resize`, `Flow` (the
  supervisor's flow decisions, see `forge.supervisor.terminal.flow`), `Close` (kill the shell's
  session; the supervisor then removes the worker), `Summary`, `Stats`.
- Streams: the host sends everything a viewer needs on ONE ordered bulk stream, `output`, so a
  shell's last bytes always precede the summary that says it exited. Each frame's `meta` says
  what it is (`OutputMeta`): an int is a kind-4 frame's seq (its payload the frame in final wire
  form, relayed untouched), a map is a `TerminalSummary` (empty payload), sent whenever the
  strip's words change.
- Keystrokes do not come through the host: it lends the supervisor its PTY master
  (`forge.ipc.lending`) before it says hello, and the supervisor writes them there itself.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from forge.ipc.protocol import WorkerProtocol, WorkerRequest
from forge.wire.terminal import TerminalSummary

OUTPUT_STREAM = "output"
"""Host -> supervisor: kind-4 frames and summaries, in order."""

MIN_COLS, MAX_COLS = 2, 500
MIN_ROWS, MAX_ROWS = 1, 300
"""O-TM4: the sizes a PTY may take; the supervisor refuses others before asking."""

Cols = Annotated[int, msgspec.Meta(ge=MIN_COLS, le=MAX_COLS)]
Rows = Annotated[int, msgspec.Meta(ge=MIN_ROWS, le=MAX_ROWS)]


def size_fits(cols: int, rows: int) -> bool:
    """Whether a PTY may take this size (what `Resize` would refuse otherwise)."""
    return MIN_COLS <= cols <= MAX_COLS and MIN_ROWS <= rows <= MAX_ROWS


class HostConfig(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One host's settings (`WorkerSpec.config`)."""

    terminal: int
    """The terminal's wire id: kind-4 frames carry it."""
    cwd: str
    shell: str | None = None
    """Run `shell -l`; None: `$SHELL -l`, else `/bin/sh -l` (O-TM8)."""
    argv: list[str] | None = None
    """An exact command instead of the login shell (tests, benchmarks)."""
    cols: Cols = 80
    rows: Rows = 24


# --- requests and their answers ---------------------------------------------------------


class Viewed(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    """The last frame the screen reflects: frames after it follow the view."""
    screen: str
    """The screen as a VT stream (`render_screen`)."""
    cols: int
    rows: int


class View(WorkerRequest[Viewed], tag="view", frozen=True):
    """The screen now, caught up with every frame sent so far."""


class Resized(msgspec.Struct, frozen=True, kw_only=True):
    cols: int
    rows: int


class Resize(WorkerRequest[Resized], tag="resize", frozen=True):
    cols: Cols
    rows: Rows


class FlowState(msgspec.Struct, frozen=True, kw_only=True):
    paused: list[str]
    """Why the PTY is not read now (`controller`, `ipc`, `unparsed`); empty when it is."""
    muted: bool


class Flow(WorkerRequest[FlowState], tag="flow", frozen=True):
    """The supervisor's flow decisions; a field left None changes nothing."""

    paused: bool | None = None
    """The controller's backpressure: true stops reading the PTY, false reads it again."""
    muted: bool | None = None
    """True while no viewer takes frames live: none are sent (the screen model still follows)."""
    epoch: int = 0
    """Numbers `muted`: a decision no newer than the last applied is ignored."""
    paced: bool | None = None
    """True while the controller's page says what it has parsed (`terminal_ack`): the PTY is read
    only while at most `UNPARSED_HIGH` of what was sent is unparsed; false: no such bound."""
    pace_epoch: int = 0
    """Numbers `paced` as `epoch` numbers `muted`."""
    parsed: int | None = None
    """The seq the controller's page has parsed up to (an ack, or its fresh view's seq)."""


class Closed(msgspec.Struct, frozen=True, kw_only=True):
    exit_status: int


class Close(WorkerRequest[Closed], tag="close", frozen=True):
    """Kill the shell's session; answered once its last bytes and summary were sent."""


class Summary(WorkerRequest[TerminalSummary], tag="summary", frozen=True):
    """The summary now (the stream carries each change; this is for the first one)."""


class HostStats(msgspec.Struct, frozen=True, kw_only=True):
    """Counters for benchmarks and diagnosis."""

    seq: int
    unread: int
    """Bytes waiting in the PTY."""
    unsent: int
    """Bytes queued towards the supervisor."""
    paused: list[str]
    muted: bool
    screen_pending: int
    screen_skipped: int


class Stats(WorkerRequest[HostStats], tag="stats", frozen=True):
    pass


# --- the output stream's metadata -------------------------------------------------------

OutputMeta = int | TerminalSummary
"""What one `output` frame is: a kind-4 frame (its seq) or a summary."""


def summary_meta(summary: TerminalSummary) -> Any:
    """A summary as an `output` frame's meta (msgpack builtins)."""
    return msgspec.to_builtins(summary)


def read_output_meta(meta: Any) -> OutputMeta:
    """An `output` frame's meta, typed: the seq of a kind-4 frame, or a summary.

    A bare int keeps the per-frame cost to one small msgpack integer; summaries are rare.
    """
    if type(meta) is int:
        return meta
    return msgspec.convert(meta, TerminalSummary)


TERMINAL = WorkerProtocol(
    kind="terminal",
    module="forge.workers.terminal",
    requests=(View, Resize, Flow, Close, Summary, Stats),
    streams=(OUTPUT_STREAM,),
    restart=False,
    lends=True,
)
