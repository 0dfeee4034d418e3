"""The replay planner: pure decisions about spooled entries, fed outcomes, no I/O.

Two kinds of stop, deliberately different: the forge still down stops the whole replay (the rest
lose nothing by waiting); an entry that cannot be delivered on its own terms is set aside with a
reason and the queue continues.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from forge.health import gh_args
from forge.health.signals import is_availability_failure
from forge.health.spool import QueueEntry

CLAIM_SKEW_MS: Final = 120_000
"""An item counts as this entry's landed write only if created at or after enqueue minus this
skew (clocks differ between here and the forge)."""
CHECKED_KINDS: Final = frozenset({"comment", "create", "close", "reopen"})
"""edit needs no check: setting a label, title or body is a set operation."""


@dataclass(frozen=True)
class Deliver:
    argv: list[str]
    target: str | None


@dataclass(frozen=True)
class Wait:
    reason: str


@dataclass(frozen=True)
class SetAside:
    reason: str


@dataclass(frozen=True)
class Delivered:
    pass


@dataclass(frozen=True)
class Stop:
    signal: str


@dataclass(frozen=True)
class Retry:
    attempts: int
    reason: str


Judgement = Delivered | Stop | SetAside | Retry


def select(entries: Iterable[QueueEntry], batch: int) -> list[QueueEntry]:
    """Pending entries in seq order, at most `batch` of them (0 means all)."""
    pending = sorted((e for e in entries if e.status == "pending"), key=lambda e: e.seq)
    return pending[:batch] if batch > 0 else pending


def resolve(
    entry: QueueEntry,
    handles: Mapping[str, int],
    pending_creates: Iterable[str],
    refused: Mapping[str, str] | None = None,
) -> Deliver | Wait | SetAside:
    """The argv to run once every handle it names has a real number.

    `refused` maps the handle of each corrupt or untrusted slot to what is wrong with it: a
    dependent of such an entry is blocked by that, not by a create that "never landed" (it was
    never tried).
    """
    waiting = set(pending_creates)
    for handle in entry.depends_on:
        if handle in handles:
            continue
        if handle in waiting:
            return Wait(f"waits for {handle}, whose create has not landed yet")
        if refused and handle in refused:
            return SetAside(f"blocked: the create it depends on ({handle}) is {refused[handle]}")
        return SetAside(f"the create it depends on ({handle}) never landed")
    numbers = dict(handles)
    argv = gh_args.substitute(entry.argv, numbers) + repo_args(entry)
    target = entry.target
    if target is not None and target in numbers:
        target = str(numbers[target])
    return Deliver(argv, target)


def repo_args(entry: QueueEntry) -> list[str]:
    """`-R` as resolved at enqueue, so replay from any directory targets the same repo."""
    if not entry.repo:
        return []
    return ["-R", entry.repo if not entry.host else f"{entry.host}/{entry.repo}"]


def judge(signal: str, stderr: str, attempts: int, max_attempts: int) -> Judgement:
    """What one delivery (or verification read) outcome means for its entry.

    Only failures that are neither availability failures nor 404 use up an attempt.
    """
    if signal == "ok":
        return Delivered()
    if is_availability_failure(signal):
        return Stop(signal)
    if signal == "notfound":
        return SetAside("not found: the target is gone (deleted during the outage?)")
    first_line = stderr.strip().splitlines()[0] if stderr.strip() else f"gh failed ({signal})"
    used = attempts + 1
    if used >= max_attempts:
        return SetAside(f"attempts exhausted ({used}): {first_line}")
    return Retry(used, first_line)


def created_ms(item: Mapping[str, Any]) -> int:
    text = str(item.get("createdAt", ""))
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0


def landed_comment(
    comments: Sequence[Mapping[str, Any]], body: str, since_ms: int, claimed: Iterable[str]
) -> str | None:
    """The URL of an unclaimed comment with exactly this body, created since enqueue."""
    taken = set(claimed)
    for comment in comments:
        url = str(comment.get("url", ""))
        if (
            comment.get("body") == body
            and created_ms(comment) >= since_ms - CLAIM_SKEW_MS
            and url not in taken
        ):
            return url
    return None


def landed_issue(
    issues: Sequence[Mapping[str, Any]],
    title: str | None,
    body: str | None,
    since_ms: int,
    claimed: Iterable[str],
) -> int | None:
    """An unclaimed issue with this body (or this title when the create had no body)."""
    taken = set(claimed)
    for issue in sorted(issues, key=created_ms):
        number = int(issue.get("number", 0))
        matches = issue.get("body") == body if body is not None else issue.get("title") == title
        if (
            matches
            and created_ms(issue) >= since_ms - CLAIM_SKEW_MS
            and f"issue:{number}" not in taken
        ):
            return number
    return None


def already_in_state(kind: str, state: str) -> bool:
    return (kind, state.upper()) in {("close", "CLOSED"), ("reopen", "OPEN")}


def number_from_url(text: str) -> int | None:
    """The issue number at the end of the URL a create prints."""
    tail = text.strip().rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else None
