"""A seat's git state as the session subject carries it: the `work` row, `git` layer and `diff`.

Data, never a rendering: files with their statuses and counts, commits, and raw hunks whose lines
carry their kind, text and line numbers. Every list that could grow with the tree is bounded here
and says when a bound bit, so a 5,000-file change crosses as a bounded frame.
"""

from __future__ import annotations

from typing import Literal

import msgspec

Status = Literal[
    "modified", "added", "deleted", "renamed", "copied", "typechange", "unmerged", "untracked"
]
Base = Literal["local", "unverified"]
"""What `default_branch` is: a local branch, or a remote-tracking one this server never fetches
(so how current it is was not checked)."""

WORKTREE_FILES_MAX = 100
"""The git layer lists at most this many uncommitted files; the totals count all of them."""
BUSIEST_MAX = 7
"""A stats block names its busiest files, up to this many."""
COMMITS_MAX = 50
"""The ahead chain walks at most this many commits; `commit_count` counts all of them."""
FILE_LINES_MAX = 400
FILE_BYTES_MAX = 32 * 1024
"""Per diff file: at most 400 carried lines or 32 KiB of their text, then `truncated`."""
DIFF_BYTES_MAX = 512 * 1024
DIFF_FILES_MAX = 100
"""Per diff layer: at most 512 KiB of carried line text over at most 100 files, then `capped`."""


class Work(msgspec.Struct, frozen=True, kw_only=True):
    """`work{branch, changed, gate}`: the checked-out branch (null when detached or no
    repository), how many entries `git status` reports, and whether git runs here at all."""

    branch: str | None
    changed: int
    gate: bool


NO_GIT = Work(branch=None, changed=0, gate=False)


class FileStat(msgspec.Struct, frozen=True, kw_only=True):
    """One changed file; `added`/`removed` are null for a binary file or an untracked one (git
    counts no lines for either)."""

    path: str
    old_path: str | None = None
    status: Status
    added: int | None
    removed: int | None


class Stats(msgspec.Struct, frozen=True, kw_only=True):
    """Totals over every file of a range, and its busiest files (most lines moved first)."""

    files: int
    added: int
    removed: int
    busiest: list[FileStat]


class Worktree(msgspec.Struct, frozen=True, kw_only=True):
    """The uncommitted files (staged, unstaged, untracked), at most `WORKTREE_FILES_MAX`."""

    files: list[FileStat]
    truncated: bool
    stats: Stats


class Commit(msgspec.Struct, frozen=True, kw_only=True):
    sha: str
    subject: str
    committed_at: int
    """Unix seconds."""
    stats: Stats


class Ahead(msgspec.Struct, frozen=True, kw_only=True):
    """The branch against `default_branch`: commits it has that the base lacks (newest first,
    at most `COMMITS_MAX`), how many the base has that it lacks, and the range's own stats."""

    commit_count: int
    behind: int
    commits: list[Commit]
    truncated: bool
    stats: Stats


class GitLayer(msgspec.Struct, frozen=True, kw_only=True):
    """`git`: null layers are nothing to state (a clean tree, no base to measure against)."""

    default_branch: str | None
    worktree: Worktree | None
    ahead: Ahead | None
    base: Base | None
    base_error: str | None = None


class Line(msgspec.Struct, frozen=True, kw_only=True):
    kind: Literal["context", "added", "removed"]
    text: str
    old: int | None
    new: int | None


class Hunk(msgspec.Struct, frozen=True, kw_only=True):
    """One `@@ -old_start,old_count +new_start,new_count @@ section` and the lines it carries."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    section: str
    lines: list[Line]


class DiffFile(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    old_path: str | None
    status: Status
    binary: bool
    submodule: bool
    truncated: bool
    """A per-file cap bit: the lines past it are not carried."""
    hunks: list[Hunk]


class Capped(msgspec.Struct, frozen=True, kw_only=True):
    files: bool
    """More files changed than `DIFF_FILES_MAX`."""
    bytes: bool
    """The carried text reached `DIFF_BYTES_MAX`; the files after it are not carried."""


class Clean(msgspec.Struct, tag_field="state", tag="clean", frozen=True):
    pass


class Populated(msgspec.Struct, tag_field="state", tag="populated", frozen=True, kw_only=True):
    files: list[DiffFile]
    files_total: int
    capped: Capped


class ScanFailed(msgspec.Struct, tag_field="state", tag="scan_failed", frozen=True, kw_only=True):
    why: str


DiffLayer = Clean | Populated | ScanFailed


class Diff(msgspec.Struct, frozen=True, kw_only=True):
    """`diff`: the worktree against HEAD (untracked files as added), and the branch against the
    merge base with `default_branch` (null when there is no base)."""

    worktree: DiffLayer
    branch_ahead: DiffLayer | None
    base: Base | None
    base_error: str | None = None
