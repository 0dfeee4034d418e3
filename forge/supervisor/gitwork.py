"""`work{branch, changed, gate}`: a directory's working tree as home and session rows draw it.

Read with the real git (`git status --porcelain=v2 --branch`), once per read (a git that hangs
holds the reader, which the connection's watchdog ends): `gate` says git
runs here, `branch` is the checked-out branch (null when detached or not a repository) and
`changed` counts the entries git reports (modified, staged, untracked).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any


def parse_status(output: str) -> dict[str, Any]:
    """The work row from `git status --porcelain=v2 --branch -z` output."""
    branch: str | None = None
    changed = 0
    records = iter(output.split("\0"))
    for record in records:
        if record.startswith("# branch.head "):
            head = record.removeprefix("# branch.head ")
            branch = None if head == "(detached)" else head
        elif record and not record.startswith("#"):
            changed += 1
            if record.startswith("2 "):
                next(records, None)  # a rename's original path is a record of its own
    return {"branch": branch, "changed": changed, "gate": True}


NO_GIT: dict[str, Any] = {"branch": None, "changed": 0, "gate": False}


async def read_work(path: Path) -> dict[str, Any]:
    """The work row at `path`; a missing directory or no repository answers `gate: false`."""
    try:
        process = await asyncio.create_subprocess_exec(
            "git", "-C", str(path), "status", "--porcelain=v2", "--branch", "-z",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
    except OSError:
        return dict(NO_GIT)
    output, _ = await process.communicate()
    if process.returncode != 0:
        return dict(NO_GIT)
    return parse_status(output.decode("utf-8", "replace"))
