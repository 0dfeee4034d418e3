"""Reading git's machine output into the work row and the git layer: pure, text in and rows out.

Every parser takes the `-z` form (NUL-separated, paths never quoted): `git status --porcelain=v2
--branch -z`, `git diff --raw --numstat -z`, and `git log -z` with a record mark before each
commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import msgspec

from forge.wire.git import (
    BUSIEST_MAX,
    COMMITS_MAX,
    WORKTREE_FILES_MAX,
    Ahead,
    Commit,
    FileStat,
    Stats,
    Status,
    Work,
    Worktree,
)

LOG_FORMAT = "%x1e%h%x1f%ct%x1f%s"
"""`git log -z --format=` for `parse_log`: a record mark, then short sha, commit time, subject."""
REFS_FORMAT = "%(HEAD)%00%(refname)%00%(upstream)%00%(symref)"
"""`git for-each-ref --format=` for `pick_base` (over `refs/heads`, `refs/remotes/origin/HEAD`)."""
BASE_FALLBACKS = ("refs/heads/main", "refs/heads/master")
"""Local branches a branch with no upstream and no `origin/HEAD` is measured against."""


class Entry(msgspec.Struct, frozen=True, array_like=True):
    """One `git status` entry: where it is, where it came from, and what happened to it."""

    path: str
    old_path: str | None
    status: Status


@dataclass(frozen=True)
class Counted:
    """One `--numstat` row; None counts for a binary file."""

    path: str
    old_path: str | None
    added: int | None
    removed: int | None


@dataclass(frozen=True)
class StatusRead:
    """One `git status`: the work row, its entries, and whether HEAD names a commit yet."""

    work: Work
    entries: list[Entry]
    born: bool


def parse_status(output: str) -> StatusRead:
    """The work row and the entries of `git status --porcelain=v2 --branch -z` output."""
    branch: str | None = None
    born = True
    entries: list[Entry] = []
    records = iter(output.split("\0"))
    for record in records:
        if record == "# branch.oid (initial)":
            born = False
        elif record.startswith("# branch.head "):
            head = record.removeprefix("# branch.head ")
            branch = None if head == "(detached)" else head
        elif record.startswith("1 "):
            fields = record.split(" ", 8)
            entries.append(Entry(fields[8], None, _ordinary(fields[1])))
        elif record.startswith("2 "):
            fields = record.split(" ", 9)
            status: Status = "copied" if fields[8].startswith("C") else "renamed"
            entries.append(Entry(fields[9], next(records, None), status))
        elif record.startswith("u "):
            entries.append(Entry(record.split(" ", 10)[10], None, "unmerged"))
        elif record.startswith("? "):
            entries.append(Entry(record[2:], None, "untracked"))
    return StatusRead(Work(branch=branch, changed=len(entries), gate=True), entries, born)


def _ordinary(xy: str) -> Status:
    """An ordinary entry's change against HEAD, from its index (X) and worktree (Y) letters."""
    if "D" in xy:
        return "deleted"
    if xy[0] == "A":
        return "added"
    if "T" in xy:
        return "typechange"
    return "modified"


_RAW_STATUS: dict[str, Status] = {
    "A": "added",
    "D": "deleted",
    "M": "modified",
    "R": "renamed",
    "C": "copied",
    "T": "typechange",
    "U": "unmerged",
}


def parse_numstat(output: str) -> list[Counted]:
    """`git diff --numstat -z` (raw records, when `--raw` came too, are skipped)."""
    return [row for row in _changes(output) if isinstance(row, Counted)]


def parse_changes(output: str) -> list[FileStat]:
    """`git diff --raw --numstat -z` (or one `git log -z --raw --numstat` record's part): each
    file with the status its raw record names and the counts its numstat row gives."""
    statuses: dict[str, Status] = {}
    files = []
    for row in _changes(output):
        if isinstance(row, Counted):
            files.append(
                FileStat(
                    path=row.path,
                    old_path=row.old_path,
                    status=statuses.get(row.path, "modified"),
                    added=row.added,
                    removed=row.removed,
                )
            )
        else:
            statuses[row[0]] = row[1]
    return files


def _changes(output: str) -> Iterator[Counted | tuple[str, Status]]:
    tokens = iter(output.split("\0"))
    for token in tokens:
        token = token.lstrip("\n")
        if not token:
            continue
        if token.startswith(":"):  # :<modes> <shas> <letter>[score], then one path or two
            letter = token.rsplit(" ", 1)[-1][:1]
            path = next(tokens, "")
            if letter in "RC":
                path = next(tokens, "")
            yield path, _RAW_STATUS.get(letter, "modified")
            continue
        added, removed, path = token.split("\t", 2)
        old_path = None
        if not path:  # a rename or copy: the old and new paths follow as tokens of their own
            old_path, path = next(tokens, ""), next(tokens, "")
        yield Counted(path, old_path, _count(added), _count(removed))


def _count(text: str) -> int | None:
    return None if text == "-" else int(text)


def stats(rows: Iterable[FileStat]) -> Stats:
    """Totals over `rows` and the busiest of them (most lines moved; binaries count none)."""
    listed = list(rows)
    busiest = sorted(listed, key=lambda row: -((row.added or 0) + (row.removed or 0)))
    return Stats(
        files=len(listed),
        added=sum(row.added or 0 for row in listed),
        removed=sum(row.removed or 0 for row in listed),
        busiest=busiest[:BUSIEST_MAX],
    )


def worktree(entries: list[Entry], counted: list[Counted]) -> Worktree | None:
    """The uncommitted layer: each status entry with its counts against HEAD; None when clean."""
    if not entries:
        return None
    counts = {row.path: row for row in counted}
    files = []
    for entry in entries:
        row = counts.get(entry.path)
        files.append(
            FileStat(
                path=entry.path,
                old_path=entry.old_path,
                status=entry.status,
                added=row.added if row else None,
                removed=row.removed if row else None,
            )
        )
    return Worktree(
        files=files[:WORKTREE_FILES_MAX],
        truncated=len(files) > WORKTREE_FILES_MAX,
        stats=stats(files),
    )


def parse_log(output: str) -> Iterator[Commit]:
    """Commits of `git log -z --raw --numstat --format=LOG_FORMAT`, newest first."""
    for record in output.split("\x1e"):
        if not record:
            continue
        header, _, numstat = record.partition("\0")
        sha, committed_at, subject = header.split("\x1f", 2)
        yield Commit(
            sha=sha,
            subject=subject,
            committed_at=int(committed_at),
            stats=stats(parse_changes(numstat)),
        )


def ahead(counts: str, log: str, range_numstat: str, *, walked: int = COMMITS_MAX) -> Ahead | None:
    """The branch against its base from `git rev-list --left-right --count base...HEAD` ("behind
    ahead"), the walked log and the range's numstat; None when the two are level."""
    behind, count = (int(part) for part in counts.split())
    if behind == 0 and count == 0:
        return None
    commits = list(parse_log(log))[:walked]
    return Ahead(
        commit_count=count,
        behind=behind,
        commits=commits,
        truncated=count > len(commits),
        stats=stats(parse_changes(range_numstat)),
    )


def pick_base(refs: str) -> str | None:
    """The ref the checked-out branch is measured against, from `git for-each-ref` with
    `REFS_FORMAT`: its upstream, else what `origin/HEAD` points at, else a local `main` or
    `master` that is not the branch itself; None when there is none (or HEAD is detached)."""
    current, upstream, origin = None, "", ""
    heads = set()
    for line in refs.splitlines():
        mark, name, tracked, target = [*line.split("\0"), "", "", ""][:4]
        if name == "refs/remotes/origin/HEAD":
            origin = target
        elif mark == "*":
            current, upstream = name, tracked
        heads.add(name)
    if current is None:
        return None
    if upstream:
        return upstream
    if origin:
        return origin
    return next((ref for ref in BASE_FALLBACKS if ref in heads and ref != current), None)
