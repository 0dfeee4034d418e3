"""Draining the spool: the planner's decisions carried out against the real gh.

Replay runs the real binary directly, never the shim, so a failure during replay can never
re-spool; each call is still recorded through the `record` door. A non-blocking lock serialises
drains, so two concurrent drains never deliver an entry twice. Only entries that `spool` trusts
(sealed by this forge, of an allowed shape) are ever run: every other entry file, in the queue or
in the project's own `.forge/queue`, is moved aside and reported.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge.clock import Clock, epoch_ms
from forge.health import realgh, spool
from forge.health.atomic import write_json
from forge.health.replay_plan import (
    CHECKED_KINDS,
    Deliver,
    Delivered,
    Judgement,
    SetAside,
    Stop,
    Wait,
    already_in_state,
    judge,
    landed_comment,
    landed_issue,
    number_from_url,
    repo_args,
    resolve,
    select,
)
from forge.health.settings import Settings
from forge.health.spool import ProjectQueue, QueueEntry, RefusedEntry

CLAIMS_NAME = "claimed.json"


@dataclass
class ReplayReport:
    apply: bool
    busy: bool = False
    delivered: list[str] = field(default_factory=list)
    set_aside: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    retrying: list[str] = field(default_factory=list)
    stopped: str | None = None
    plan: list[str] = field(default_factory=list)
    remaining: int = 0
    corrupt: list[str] = field(default_factory=list)
    """Entries that do not read back: never replayed, kept on disk for a person."""
    untrusted: list[str] = field(default_factory=list)
    """Entries forge cannot vouch for (no valid seal, a shape outside the allow-list, or found
    in the project): never replayed, kept on disk for a person."""

    @property
    def clean(self) -> bool:
        """Drained cleanly and completely: the only answer that exits 0."""
        return not (
            self.busy
            or self.corrupt
            or self.untrusted
            or self.set_aside
            or self.waiting
            or self.retrying
            or self.stopped
            or self.remaining
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "apply": self.apply,
            "busy": self.busy,
            "delivered": self.delivered,
            "set_aside": self.set_aside,
            "waiting": self.waiting,
            "retrying": self.retrying,
            "stopped": self.stopped,
            "plan": self.plan,
            "remaining": self.remaining,
            "corrupt": self.corrupt,
            "untrusted": self.untrusted,
            "clean": self.clean,
        }


@contextlib.contextmanager
def drain_lock(queue: ProjectQueue) -> Iterator[bool]:
    """True when this process holds the drain; False when another drain is running."""
    path = spool.ensure_queue_dir(queue) / "drain.lock"
    with path.open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True


class _Drain:
    def __init__(self, queue: ProjectQueue, settings: Settings, clock: Clock, gh: Path) -> None:
        self.queue = queue
        self.settings = settings
        self.clock = clock
        self.gh = gh
        self.claims = self._load_claims()

    def _load_claims(self) -> list[str]:
        try:
            data = json.loads((self.queue.directory / CLAIMS_NAME).read_text())
        except (FileNotFoundError, ValueError):
            return []
        return [str(item) for item in data]

    def _claim(self, item: str) -> None:
        self.claims.append(item)
        write_json(self.queue.directory / CLAIMS_NAME, self.claims)

    def call(self, argv: list[str]) -> realgh.CallResult:
        # In the project, so an entry whose repo could not be resolved still meets its remote.
        return realgh.run(
            self.gh,
            argv,
            state_dir=self.settings.state_dir,
            clock=self.clock,
            stdin=b"",
            cwd=self.queue.project,
        )

    def log(self, entry: QueueEntry, outcome: str, reason: str) -> None:
        spool.append_replay_log(
            self.queue, epoch_ms(self.clock), entry.seq, entry.kind, outcome, reason
        )

    def landed(self, entry: QueueEntry, step: Deliver) -> tuple[str | None, Judgement | None]:
        """Did this write already reach the forge (landed, then the reply was lost)?

        Returns (what it landed as, or None) and a judgement when the check itself failed.
        """
        body = self._body(entry)
        if entry.kind == "create":
            fields = "number,title,body,createdAt"
            argv = ["issue", "list", "--state", "all", "--limit", "100", "--json", fields]
        else:
            field = "comments" if entry.kind == "comment" else "state"
            argv = ["issue", "view", str(step.target), "--json", field]
        result = self.call(argv + repo_args(entry))
        stderr = result.stderr.decode(errors="replace")
        verdict = judge(result.signal, stderr, entry.attempts, self.settings.queue_attempts)
        if not isinstance(verdict, Delivered):
            return None, verdict
        try:
            data = json.loads(result.stdout)
            if entry.kind == "create":
                number = landed_issue(data, entry.title, body, entry.enqueued_at, self.claims)
                return (None if number is None else f"issue:{number}"), None
            if entry.kind == "comment":
                comments = data["comments"]
                return landed_comment(comments, body or "", entry.enqueued_at, self.claims), None
            return ("state" if already_in_state(entry.kind, data["state"]) else None), None
        except (ValueError, KeyError, TypeError) as error:
            reason = f"unreadable verification answer ({type(error).__name__})"
            return None, judge("other", reason, entry.attempts, self.settings.queue_attempts)

    def _body(self, entry: QueueEntry) -> str | None:
        if not entry.has_body:
            return None
        body = spool.body_path(self.queue, entry.seq).read_bytes()
        return body.decode("utf-8", "surrogateescape")

    def finish_delivered(self, entry: QueueEntry, landed_as: str | None, how: str) -> None:
        if entry.kind == "create" and entry.handle and landed_as and landed_as.startswith("issue:"):
            spool.save_handle(self.queue, entry.handle, int(landed_as.split(":", 1)[1]))
        if landed_as and landed_as != "state":
            self._claim(landed_as)
        self.log(entry, "delivered", how)
        spool.remove_delivered(self.queue, entry.seq)

    def set_aside(self, entry: QueueEntry, reason: str) -> None:
        entry.status = "set_aside"
        entry.reason = reason
        spool.write_entry(self.queue, entry)
        self.log(entry, "set_aside", reason)


def replay(
    root: Path,
    settings: Settings,
    clock: Clock,
    *,
    apply: bool,
    batch: int,
    gh: Path | None = None,
) -> ReplayReport:
    """Dry run by default; with `apply`, deliver in seq order until done or the forge is down."""
    report = ReplayReport(apply=apply)
    queue = ProjectQueue.of(settings.state_dir, root)
    if not queue.directory.is_dir() and not spool.in_project_entries(queue):
        if apply:
            spool.clear_pending(settings.state_dir, queue.project)
        return report  # nothing was ever spooled here; creates nothing
    if not apply:
        return _dry_run(queue, batch, report)
    with drain_lock(queue) as held:
        if not held:
            report.busy = True
            return report
        drain = _Drain(queue, settings, clock, gh or realgh.find_real_gh())
        _apply(drain, batch, report)
        report.remaining = sum(1 for e in spool.entries(queue) if e.status == "pending")
        if report.remaining:
            spool.mark_pending(settings.state_dir, queue.project)
        else:
            spool.clear_pending(settings.state_dir, queue.project)
    return report


def _blocking(refused: list[RefusedEntry]) -> dict[str, str]:
    """What blocks the dependents of each refused slot, by the handle they name it with."""
    return {item.handle: f"{item.verdict} entry {item.describe()}" for item in refused}


def _report_refused(
    report: ReplayReport, refused: list[RefusedEntry], in_project: list[RefusedEntry]
) -> None:
    report.corrupt = [item.describe() for item in refused if item.verdict == "corrupt"]
    report.untrusted = [
        item.describe() for item in [*refused, *in_project] if item.verdict == "untrusted"
    ]


def _dry_run(queue: ProjectQueue, batch: int, report: ReplayReport) -> ReplayReport:
    entries, refused = spool.scan(queue)
    in_project = spool.in_project_entries(queue)
    handles = spool.load_handles(queue)
    pending_creates = [e.handle for e in entries if e.status == "pending" and e.handle]
    plan: list[tuple[int, str]] = []
    for entry in select(entries, batch):
        step = resolve(entry, handles, pending_creates, _blocking(refused))
        if isinstance(step, Deliver):
            line = f"{entry.name} {entry.kind}: {shlex.join(['gh', *step.argv])}"
        elif isinstance(step, Wait):
            line = f"{entry.name} {entry.kind}: after its create lands ({step.reason})"
        else:
            line = f"{entry.name} {entry.kind}: would be set aside ({step.reason})"
        plan.append((entry.seq, line))
    plan += [
        (item.seq, f"{item.name} {item.verdict}: never replayed ({item.problem})")
        for item in [*refused, *in_project]
    ]
    report.plan = [line for _, line in sorted(plan)]
    _report_refused(report, refused, in_project)
    report.remaining = sum(1 for e in entries if e.status == "pending")
    return report


def _set_refused_aside(drain: _Drain, report: ReplayReport) -> dict[str, str]:
    """Moves each refused entry file aside (once, with a replay.log row) and reports it, those
    in the project's own `.forge/queue` too; returns what blocks their dependents."""
    moved: list[list[RefusedEntry]] = []
    for found in (spool.scan(drain.queue)[1], spool.in_project_entries(drain.queue)):
        kept = []
        for item in found:
            aside = spool.move_aside(item)
            if aside.path != item.path:
                reason = f"{item.problem}; moved aside to {aside.path}"
                now_ms = epoch_ms(drain.clock)
                spool.append_replay_log(drain.queue, now_ms, item.seq, "?", item.verdict, reason)
            kept.append(aside)
        moved.append(kept)
    refused, in_project = moved
    _report_refused(report, refused, in_project)
    return _blocking(refused)


def _apply(drain: _Drain, batch: int, report: ReplayReport) -> None:
    queue = drain.queue
    blocking = _set_refused_aside(drain, report)
    for entry in select(spool.entries(queue), batch):
        current = spool.entries(queue)
        pending_creates = [e.handle for e in current if e.status == "pending" and e.handle]
        step = resolve(entry, spool.load_handles(queue), pending_creates, blocking)
        if isinstance(step, Wait):
            report.waiting.append(entry.name)
            drain.log(entry, "waiting", step.reason)
        elif isinstance(step, SetAside):
            drain.set_aside(entry, step.reason)
            report.set_aside.append(f"{entry.name}: {step.reason}")
        elif not _settle(drain, entry, *_attempt(drain, entry, step), report):
            return


def _attempt(drain: _Drain, entry: QueueEntry, step: Deliver) -> tuple[Judgement, str | None, str]:
    """Verify first (content idempotency), then deliver: (judgement, what it landed as, how)."""
    if entry.kind in CHECKED_KINDS:
        landed_as, failed = drain.landed(entry, step)
        if failed is not None:
            return failed, None, "verification read"
        if landed_as is not None:
            return Delivered(), landed_as, "already landed (content match)"
    result = drain.call(step.argv)
    stderr = result.stderr.decode("utf-8", "replace")
    verdict = judge(result.signal, stderr, entry.attempts, drain.settings.queue_attempts)
    landed: str | None = None
    if isinstance(verdict, Delivered):
        output = result.stdout.decode("utf-8", "replace").strip()
        if entry.kind == "create":
            number = number_from_url(output)
            landed = None if number is None else f"issue:{number}"
        elif entry.kind == "comment":
            landed = output or None
    return verdict, landed, "delivered"


def _settle(
    drain: _Drain,
    entry: QueueEntry,
    verdict: Judgement,
    landed_as: str | None,
    how: str,
    report: ReplayReport,
) -> bool:
    """Apply one judgement; False means the whole replay stops here."""
    if isinstance(verdict, Delivered):
        drain.finish_delivered(entry, landed_as, how)
        report.delivered.append(entry.name)
    elif isinstance(verdict, Stop):
        reason = f"the forge is still down ({verdict.signal}) at the {how}"
        drain.log(entry, "stopped", reason)
        report.stopped = f"{entry.name}: {reason}"
        return False
    elif isinstance(verdict, SetAside):
        drain.set_aside(entry, verdict.reason)
        report.set_aside.append(f"{entry.name}: {verdict.reason}")
    else:
        entry.attempts = verdict.attempts
        entry.reason = verdict.reason
        spool.write_entry(drain.queue, entry)
        drain.log(entry, "failed", verdict.reason)
        report.retrying.append(f"{entry.name}: {verdict.reason}")
    return True
