"""A seat's tree as a real git repository, for the files tests and the README's screenshots."""

from __future__ import annotations

import subprocess
from pathlib import Path

PLAN = "# The plan\n\n- read the tree\n- change `app.py`\n\n```\nmake check\n```\n"
APP = "def main():\n    return 'old'\n\n\nprint(main())\n"


def git(tree: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.invalid", *args],
        cwd=tree, check=True, capture_output=True,
    )  # fmt: skip


def seat_repository(tree: Path) -> Path:
    """`tree` with plan.md and app.py committed on `main`, then app.py modified (one line)."""
    (tree / "plan.md").write_text(PLAN, encoding="utf-8")
    (tree / "app.py").write_text(APP, encoding="utf-8")
    git(tree, "init", "-q", "-b", "main")
    git(tree, "add", ".")
    git(tree, "commit", "-q", "-m", "first")
    (tree / "app.py").write_text(APP.replace("'old'", "'new'"), encoding="utf-8")
    return tree
