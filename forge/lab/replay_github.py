"""Reading a merged pull request and its linked issue, read-only, through the user's `gh api`.

`gh` is forge health's installed shim when there is one (`$FORGE_HOME/bin/gh`), else the `gh` on
PATH, so every read is recorded and an outage is classified; a failed call is a `GhError` naming
its health signal (`net`, `auth`, `notfound`, ...). Decoding the REST documents is pure.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forge.errors import PeerError
from forge.health.realgh import is_shim
from forge.health.settings import Settings
from forge.health.signals import classify_call

GH_TIMEOUT_S = 60.0
FILES_PAGE = 100
"""One page of changed files: a replayable PR has at most 25, so one page always tells."""
_CLOSING_RE = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+#(\d+)\b", re.IGNORECASE
)
_REFERENCE_RE = re.compile(r"(?<![\w/])#(\d+)\b")


class GhError(PeerError):
    """A `gh api` read failed; `signal` is forge health's class of the failure."""

    def __init__(self, endpoint: str, signal: str, detail: str) -> None:
        super().__init__(f"gh api {endpoint}: {signal}: {detail}")
        self.signal = signal


@dataclass(frozen=True)
class ChangedFile:
    path: str
    status: str
    """added, removed, modified, renamed, copied, changed or unchanged (GitHub's words)."""
    additions: int
    deletions: int
    previous: str | None
    """The path before a rename."""


@dataclass(frozen=True)
class PullRequest:
    number: int
    title: str
    body: str
    merged: bool
    merge_commit: str | None
    base_sha: str
    base_ref: str
    changed_files: int
    files: tuple[ChangedFile, ...]


@dataclass(frozen=True)
class LinkedIssue:
    number: int
    title: str
    body: str
    state: str
    """The live state (`open` or `closed`): recorded in approval.md, never in the task."""
    is_pull_request: bool


def linked_issue_number(body: str, title: str) -> int | None:
    """The first `Closes #N`/`Fixes #N` (GitHub's closing keywords) in the body, else the first
    `#N` in the title."""
    match = _CLOSING_RE.search(body) or _REFERENCE_RE.search(title)
    return int(match.group(1)) if match else None


def decode_pull(pull: Any, files: Any) -> PullRequest:
    """The fields replay reads from `pulls/N` and one page of `pulls/N/files`."""
    if not isinstance(pull, dict) or not isinstance(files, list):
        raise ValueError("unexpected pull request document")
    base = pull.get("base") or {}
    changed = tuple(
        ChangedFile(
            path=str(item["filename"]),
            status=str(item.get("status", "modified")),
            additions=int(item.get("additions", 0)),
            deletions=int(item.get("deletions", 0)),
            previous=str(item["previous_filename"]) if item.get("previous_filename") else None,
        )
        for item in files
    )
    return PullRequest(
        number=int(pull["number"]),
        title=str(pull.get("title") or ""),
        body=str(pull.get("body") or ""),
        merged=bool(pull.get("merged")) or bool(pull.get("merged_at")),
        merge_commit=pull.get("merge_commit_sha") or None,
        base_sha=str(base.get("sha", "")),
        base_ref=str(base.get("ref", "")),
        changed_files=int(pull.get("changed_files", len(changed))),
        files=changed,
    )


def decode_issue(issue: Any) -> LinkedIssue:
    if not isinstance(issue, dict):
        raise ValueError("unexpected issue document")
    return LinkedIssue(
        number=int(issue["number"]),
        title=str(issue.get("title") or ""),
        body=str(issue.get("body") or ""),
        state=str(issue.get("state", "")),
        is_pull_request="pull_request" in issue,
    )


def gh_program(env: Mapping[str, str]) -> str:
    """forge health's installed shim when present, so reads are recorded; else `gh` on PATH."""
    shim = Settings.from_env(env).home / "bin" / "gh"
    return str(shim) if is_shim(shim) else "gh"


class GitHub:
    """Read-only REST calls for one repository through `gh api`."""

    def __init__(self, repo: str, *, env: Mapping[str, str], cwd: Path) -> None:
        self.repo = repo
        self.env = dict(env)
        self.cwd = cwd
        self.program = gh_program(env)
        self.elapsed_s = 0.0
        """Time spent waiting for gh (the forge's latency, not forge's own work)."""

    async def pull_request(self, number: int) -> PullRequest:
        pull = await self._get(f"repos/{self.repo}/pulls/{number}")
        files = await self._get(f"repos/{self.repo}/pulls/{number}/files?per_page={FILES_PAGE}")
        try:
            return decode_pull(pull, files)
        except (KeyError, TypeError, ValueError) as error:
            raise GhError(f"repos/{self.repo}/pulls/{number}", "other", repr(error)) from None

    async def issue(self, number: int) -> LinkedIssue:
        endpoint = f"repos/{self.repo}/issues/{number}"
        document = await self._get(endpoint)
        try:
            return decode_issue(document)
        except (KeyError, TypeError, ValueError) as error:
            raise GhError(endpoint, "other", repr(error)) from None

    async def _get(self, endpoint: str) -> Any:
        started = time.monotonic()
        try:
            return await self._call(endpoint)
        finally:
            self.elapsed_s += time.monotonic() - started

    async def _call(self, endpoint: str) -> Any:
        try:
            proc = await asyncio.create_subprocess_exec(
                self.program,
                "api",
                "-H",
                "Accept: application/vnd.github+json",
                endpoint,
                cwd=self.cwd,
                env=self.env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as error:
            raise GhError(endpoint, "other", f"cannot start {self.program}: {error}") from None
        try:
            out, err = await asyncio.wait_for(proc.communicate(), GH_TIMEOUT_S)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise GhError(endpoint, "net", f"no answer within {GH_TIMEOUT_S:.0f} s") from None
        rc = proc.returncode if proc.returncode is not None else 1
        text = err.decode("utf-8", errors="replace").strip()
        if rc != 0:
            raise GhError(endpoint, classify_call(rc, text), text.splitlines()[0] if text else "")
        try:
            return json.loads(out)
        except ValueError:
            raise GhError(endpoint, "other", "the answer is not JSON") from None
