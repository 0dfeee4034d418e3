"""Spooling one undeliverable write: check its shape, materialise its body, claim a slot, write
the sealed entry.

Bounded by decision: at FORGE_QUEUE_MAX pending entries enqueue refuses and the caller sees the
real failure. Set-aside entries wait for a person, not for the forge, so they do not count. A
write outside the shapes replay accepts (`write_shapes`) is refused the same way, before a slot
is taken, so everything spooled replays.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from forge.clock import Clock, epoch_ms
from forge.git import profile_env
from forge.health import gh_args, spool, write_shapes
from forge.health.spool import ProjectQueue, QueueEntry

DEFAULT_HOST = "github.com"
"""Left implicit in `-R`, as gh does; any other host is passed as HOST/OWNER/REPO."""


@dataclass(frozen=True)
class Spooled:
    entry: QueueEntry
    depth: int

    def marker(self) -> str:
        if self.entry.live_signal is None:
            why = f"it waits for {', '.join(self.entry.depends_on)}, which has not landed yet"
        else:
            why = f"the live call failed ({self.entry.live_signal})"
        return (
            f"[forge-queue] not delivered yet — {why}. Spooled as {self.entry.name}; it replays "
            f"in order when the forge recovers (queue depth {self.depth})."
        )

    def handle_url(self) -> str | None:
        """Where the real issue URL would have gone, for a create: its basename is the handle."""
        if self.entry.handle is None:
            return None
        host = self.entry.host or DEFAULT_HOST
        repo = self.entry.repo or "unknown/unknown"
        return f"https://{host}/{repo}/issues/{self.entry.handle}"


@dataclass(frozen=True)
class Refused:
    pending: int

    def marker(self) -> str:
        return (
            f"[forge-queue] NOT queued — spool full ({self.pending} pending); "
            "this write was not delivered"
        )


@dataclass(frozen=True)
class NotReplayable:
    """A write whose shape replay would refuse: passed through as it failed, never spooled."""

    reason: str

    def marker(self) -> str:
        return (
            f"[forge-queue] NOT queued — {self.reason}, so replay would refuse it; "
            "this write was not delivered"
        )


BODY_PLACEHOLDER = "<sidecar>"
"""Stands for the body's sidecar while the shape is checked, before a slot (and so a path)."""


def pending_count(queue: ProjectQueue, now_ms: int) -> int:
    """Pending entries plus slots still being written (they will be pending in a moment)."""
    pending = sum(1 for entry in spool.entries(queue) if entry.status == "pending")
    return pending + len(spool.orphan_slots(queue, now_ms)[0])


def resolve_repo(
    parsed: gh_args.ParsedWrite, env: Mapping[str, str], root: Path
) -> tuple[str | None, str | None]:
    """(host, owner/repo) as gh would pick them: `-R`, then GH_REPO, then the origin remote.

    Resolved at enqueue, so a replay started from another directory still targets the right repo.
    """
    host_env = env.get("GH_HOST") or None
    for value in (parsed.value(gh_args.REPO_FLAGS), env.get("GH_REPO")):
        if value:
            host, repo = gh_args.split_repo(value)
            return host or host_env, repo
    found = origin_remote(root)
    if found is None:
        return host_env, None
    remote_host = None if found[0] == DEFAULT_HOST else found[0]
    return host_env or remote_host, found[1]


def origin_remote(root: Path) -> tuple[str, str] | None:
    """(host, owner/repo) of the project's origin remote: the repo gh picks with no `-R` (read
    under `forge.git`'s profile: the project is not forge's, nor is the caller's environment)."""
    try:
        url = subprocess.run(
            ["git", "-C", str(root), "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            check=False,
            env=profile_env(),
        ).stdout
    except OSError:
        return None
    return gh_args.repo_from_remote(url) if url.strip() else None


def read_body(parsed: gh_args.ParsedWrite, read_stdin: Callable[[], bytes]) -> bytes | None:
    """The body exactly as the live call sent it: `--body`, `--body-file FILE` or stdin."""
    body: bytes | None = None
    for option in parsed.options:
        if option.value is None:
            continue
        if option.flag in gh_args.BODY_FLAGS:
            body = os.fsencode(option.value)
        elif option.flag in gh_args.BODY_FILE_FLAGS:
            body = read_stdin() if option.value == "-" else Path(option.value).read_bytes()
    return body


def enqueue(
    queue: ProjectQueue,
    argv: Sequence[str],
    *,
    max_pending: int,
    clock: Clock,
    env: Mapping[str, str],
    live_signal: str | None,
    live_stderr: str,
    read_stdin: Callable[[], bytes],
) -> Spooled | Refused | NotReplayable:
    parsed = gh_args.parse_write(argv)
    host, repo = resolve_repo(parsed, env, queue.project)
    body = read_body(parsed, read_stdin)
    refusal = write_shapes.refusal(
        kind=parsed.kind,
        argv=gh_args.replayable_argv(parsed, None if body is None else BODY_PLACEHOLDER),
        repo=repo,
        host=host,
        body_file=None if body is None else BODY_PLACEHOLDER,
    )
    if refusal is not None:
        return NotReplayable(refusal)
    pending = pending_count(queue, epoch_ms(clock))
    if pending >= max_pending:
        return Refused(pending)
    title = parsed.value(gh_args.TITLE_FLAGS)
    seq = spool.allocate(queue)
    body_file = None if body is None else str(spool.write_body(queue, seq, body))
    digest = hashlib.sha256()
    for part in (parsed.kind, repo or "", parsed.target or "", title or ""):
        digest.update(part.encode() + b"\0")
    digest.update(body or b"")
    handles = gh_args.handles_in(argv)
    entry = QueueEntry(
        seq=seq,
        kind=parsed.kind,
        repo=repo,
        host=host,
        target=parsed.target,
        handle=f"FORGE-Q{seq}" if parsed.kind == "create" else None,
        depends_on=handles,
        idempotency_key=digest.hexdigest(),
        argv=gh_args.replayable_argv(parsed, body_file),
        title=title,
        has_body=body is not None,
        enqueued_at=epoch_ms(clock),
        project=str(queue.project),
        live_signal=live_signal,
        live_stderr=live_stderr,
        body_sha256=None if body is None else hashlib.sha256(body).hexdigest(),
    )
    spool.write_entry(queue, entry)
    return Spooled(entry, pending + 1)
