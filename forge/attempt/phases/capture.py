"""The capture phase: what the recipe changed, read through forge's own git folder.

The workspace's content becomes a commit on the base in the attempt source (the recipe's `.git`
is never read); its diff and list of changes are written as evidence (`changes.diff`,
`changes.json`), and the changes outside the plan's allowed files are the scope violations.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from forge.attempt.checkouts import Capture, cap_diff, capture_tree, unified_diff
from forge.attempt.phases.context import Context
from forge.git import GitError


@dataclass(frozen=True)
class Change:
    """A captured change: the commit, its diff's figures, and the paths outside the scope."""

    capture: Capture
    diff_sha256: str
    diff_bytes: int
    diff_truncated: bool
    violations: tuple[str, ...]

    @property
    def changed_files(self) -> list[str]:
        return [path for _, path in self.capture.changes]


@dataclass(frozen=True)
class Captured:
    """The capture phase's result: the change, or why it could not be captured."""

    change: Change | None
    error: str | None


async def capture(context: Context) -> Captured:
    """Capture the workspace (whatever the phases before left of it) and write the evidence."""
    await context.hold("capture")
    base = context.plan.base_commit
    try:
        context.forced("capture")
        captured = await capture_tree(
            context.source,
            context.workspace,
            base,
            context.work / "capture-index",
            context.stat_index,
        )
        diff, truncated = cap_diff(await unified_diff(context.source, base, captured.commit))
    except (GitError, OSError) as error:
        return Captured(change=None, error=str(error))
    await context.write_bytes("changes.diff", diff)
    paths = [{"path": path, "status": status} for status, path in captured.changes]
    await context.write_json("changes.json", {"schemaVersion": 1, "paths": paths})
    change = Change(
        capture=captured,
        diff_sha256=hashlib.sha256(diff).hexdigest(),
        diff_bytes=len(diff),
        diff_truncated=truncated,
        violations=tuple(captured.outside(context.plan.allowed_files)),
    )
    return Captured(change=change, error=None)
