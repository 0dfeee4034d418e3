"""The Lab on the socket (our additions): the verbs that start and stop a cohort run in the
supervisor, and the `lab` subject that shows its runs.

`lab_start` hands an approved run to the supervisor, which checks it exactly as `forge evaluate`
does (the reply's `why` is the refusal the CLI would print) and runs it with its own attempt
runners; `lab_stop` stops a run as SIGINT stops `forge evaluate` (in-flight attempts discarded,
the run `aborted` and resumable). Both answer through `reply_to` with `{ok, run}` or
`{ok: false, why}`. `lab_report` asks for an ended run's report.html, answered `{ok, run, html}`:
only that file of a run this supervisor lists (the client names a run id, never a path).

The `lab` subject's snapshot is `{runs}`, every run this supervisor started, in start order; its
updates are keyless: `lab_run{run}` (a run started or ended: the whole row), `lab_attempt{run,
attempt, done, total, accepted}` (one attempt started, was recorded or was discarded) and
`lab_processes{run, label, processes}` (a running attempt's process tree moved).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from forge.wire.client import ClientMessage, ReplyTo

LAB: Literal["lab"] = "lab"
"""The subject's name."""

Signal = Literal["SIGINT", "SIGTERM"]
AttemptState = Literal["pending", "running", "recorded"]
"""`pending`: not started yet, or discarded by a stop (a resume runs it again)."""
RunStatus = Literal["running", "complete", "stopped", "aborted"]


class LabStart(ClientMessage, frozen=True, tag="lab_start"):
    """Run an approved cohort in the supervisor. Paths are absolute (the CLI resolves them once,
    in its own directory); `env` is the caller's environment, which the run reads as
    `forge evaluate` reads its own (the recipe's PATH, LANG and TMPDIR, the values redacted from
    output tails, the test hooks)."""

    cohort: str
    source: str
    out: str
    approve: str
    parallel: int = 1
    keep_workspaces: bool = False
    env: dict[str, str] = msgspec.field(default_factory=dict)
    reply_to: ReplyTo | None = None


class LabStop(ClientMessage, frozen=True, tag="lab_stop"):
    """Stop run `run` as that signal stops `forge evaluate` (SIGINT: exit 130, SIGTERM: 143)."""

    run: str
    signal: Signal = "SIGINT"
    reply_to: ReplyTo | None = None


class LabReport(ClientMessage, frozen=True, tag="lab_report"):
    """The report.html of run `run`, once it ended."""

    run: str
    reply_to: ReplyTo | None = None


class LabAnswer(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The reply body of `lab_start` and `lab_stop`."""

    ok: bool
    run: str | None = None
    why: str | None = None
    html: str | None = None
    """`lab_report`'s answer: the page."""


class LabAttempt(msgspec.Struct, kw_only=True):
    """One coordinate of a run (task, then repetition, then variant A and B)."""

    label: str
    """`<task>/<variant>/rep-<n>`."""
    task: str
    variant: str
    repetition: int
    state: AttemptState
    runner: str | None = None
    """The attempt runner holding it while it runs: its row in home's `workers`."""
    started_ms: int | None = None
    """When it started (Unix ms), while it runs."""
    elapsed_ms: int | None = None
    """Once recorded: the whole attempt's time."""
    outcome: str | None = None
    """Once recorded: its outcome class (`accepted`, `failed`, `incomplete`, `invalid:<why>`)."""
    correct: bool | None = None
    processes: list[dict[str, Any]] | None = None
    """While it runs: its runner's process tree as flat rows, parents first (the rows of a
    session's `processes`: pid, ppid, name, cmdline, cpu_percent, rss_bytes, started_ms)."""


class LabRun(msgspec.Struct, kw_only=True):
    """One run this supervisor started."""

    run: str
    """The run's id (what `lab_stop` names)."""
    cohort: str
    source: str
    out: str
    hypothesis: str
    digest: str
    parallel: int
    status: RunStatus
    started_ms: int
    done: int
    """Recorded attempts."""
    total: int
    accepted: dict[str, int]
    """Variant name -> accepted attempts so far."""
    stop_reason: str | None = None
    abort_reason: str | None = None
    exit_code: int | None = None
    """Once it ended: what `forge evaluate` exits with for it (0, 1, 2, 130, 143)."""
    attempts: list[LabAttempt]


class LabView(msgspec.Struct, kw_only=True):
    """The `lab` subject's snapshot."""

    runs: list[LabRun]
