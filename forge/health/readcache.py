"""The read cache: when a failed read may be answered from last-known state, and the store.

The shim owns the allowlist (`issue list`, `issue view`, `search issues`: a command nobody has
reasoned about is never cached or served), stores successful reads on the way past (`<key>.out`,
temp-then-rename, `<key>.argv` beside it for people) and keys them itself, so Python only ever
sees a key. This module decides what a failed read gets, lists or clears the store, and drops
every cached view of an issue the forge has said is gone (the shim drops the exact key itself).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from forge.health import gh_args
from forge.health.signals import is_availability_failure

VIEW_VALUE_FLAGS: Final = frozenset({"-R", "--repo", "--json", "-q", "--jq", "-t", "--template"})
"""The `gh issue view` flags that take a value; every other flag is a switch."""
_ISSUE_URL: Final = re.compile(r"https?://[^/]+/(?P<repo>[^/]+/[^/]+)/(?:issues|pull)/(?P<n>\d+)")


@dataclass(frozen=True)
class Serve:
    age_s: int

    def marker(self, signal: str) -> str:
        return (
            f"[forge-cache] served from cache (age {self.age_s}s) — the live call failed "
            f"({signal}). This is last-known state, not live."
        )


@dataclass(frozen=True)
class PassThrough:
    """The live failure goes to the caller unchanged; `note`, if any, is added on stderr."""

    note: str | None = None
    stale_age_s: int | None = None


def decide(signal: str, entry_age_s: int | None, max_age_s: int) -> Serve | PassThrough:
    """A 404 or usage error is the forge answering; a query never seen live fails honestly; an
    entry past the bound is reported rather than handed over as current."""
    if not is_availability_failure(signal) or entry_age_s is None:
        return PassThrough()
    if entry_age_s > max_age_s:
        return PassThrough(
            note=(
                f"[forge-cache] not served: cached copy is {human_age(entry_age_s)} old "
                f"(bound {human_age(max_age_s)})"
            ),
            stale_age_s=entry_age_s,
        )
    return Serve(age_s=max(0, entry_age_s))


def human_age(seconds: int) -> str:
    if seconds >= 3600:
        return f"{seconds // 3600}h"
    if seconds >= 120:
        return f"{seconds // 60}m"
    return f"{seconds}s"


@dataclass(frozen=True)
class Entry:
    key: str
    argv: list[str]
    stored_ms: int
    size: int


def cache_dir(root: Path) -> Path:
    return root / ".forge" / "cache"


def entry_path(root: Path, key: str) -> Path:
    if not key or key[0] not in "~h" or not all(ch.isalnum() or ch in "._,=%~-" for ch in key):
        raise ValueError(f"not a cache key: {key!r}")
    return cache_dir(root) / f"{key}.out"


def entries(root: Path) -> list[Entry]:
    """What is cached: each entry with the argv the shim wrote beside it (if it is still there)."""
    found: list[Entry] = []
    for out in sorted(cache_dir(root).glob("*.out")):
        try:
            info = out.stat()
        except FileNotFoundError:
            continue
        try:
            argv = out.with_suffix(".argv").read_text(errors="replace").splitlines()
        except FileNotFoundError:
            argv = []
        found.append(Entry(out.stem, argv, info.st_mtime_ns // 1_000_000, info.st_size))
    return found


def clear(root: Path) -> int:
    """Drop every entry; it costs a re-fetch, nothing more."""
    removed = 0
    directory = cache_dir(root)
    if not directory.is_dir():
        return 0
    for path in directory.iterdir():
        if path.suffix == ".out":
            removed += 1
        path.unlink(missing_ok=True)
    return removed


@dataclass(frozen=True)
class IssueRef:
    repo: str | None
    """owner/repo, lower case; None for the repo gh picks by itself (GH_REPO or the remote)."""
    number: int


def viewed_issue(argv: Sequence[str]) -> IssueRef | None:
    """The issue an `issue view` argv shows (by number, `#n` or URL), or None for anything else."""
    if list(argv[:2]) != ["issue", "view"]:
        return None
    repo: str | None = None
    ref: str | None = None
    words = iter(argv[2:])
    for word in words:
        if word in VIEW_VALUE_FLAGS:
            value = next(words, None)
            repo = value if word in gh_args.REPO_FLAGS else repo
        elif word.startswith("--repo="):
            repo = word.split("=", 1)[1]
        elif word.startswith("-R") and len(word) > 2:
            repo = word[2:]
        elif not word.startswith("-") and ref is None:
            ref = word
    if ref is None:
        return None
    url = _ISSUE_URL.fullmatch(ref.rstrip("/"))
    if url is not None:
        return IssueRef(url.group("repo").lower(), int(url.group("n")))
    number = ref.removeprefix("#")
    if not number.isdigit():
        return None
    return IssueRef(None if not repo else gh_args.split_repo(repo)[1].lower(), int(number))


def same_issue(a: IssueRef, b: IssueRef, default_repo: str | None) -> bool:
    """Both name one issue once the repo gh would pick is filled in for either."""
    default = default_repo.lower() if default_repo else None
    return a.number == b.number and (a.repo or default) == (b.repo or default)


def drop_issue_views(root: Path, argv: Sequence[str], default_repo: str | None) -> int:
    """The forge answered 404/410 for this `issue view`: drop every cached view of that issue,
    so a later outage cannot hand out a copy of something that no longer exists."""
    gone = viewed_issue(argv)
    if gone is None:
        return 0
    dropped = 0
    for entry in entries(root):
        cached = viewed_issue(entry.argv)
        if cached is not None and same_issue(gone, cached, default_repo):
            out = cache_dir(root) / f"{entry.key}.out"
            out.unlink(missing_ok=True)
            out.with_suffix(".argv").unlink(missing_ok=True)
            dropped += 1
    return dropped
