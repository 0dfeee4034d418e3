"""The build stamp: "X.Y.Z · sha7" and "X.Y.Z+sha7", the sha read from real git."""

from __future__ import annotations

import subprocess
from pathlib import Path

import forge
from forge.config import build_stamp
from forge.config.stamp import UNKNOWN_COMMIT, commit_of, stamp_for


def test_the_stamp_formats_full_and_short() -> None:
    assert stamp_for("1.1.25", "abc1234") == ("1.1.25 \u00b7 abc1234", "1.1.25+abc1234")


def test_the_stamp_names_this_version_and_a_commit_of_this_checkout() -> None:
    """Others commit while the suite runs, so the stamp (read once) is HEAD or an ancestor of it."""
    package = Path(forge.__file__).parent
    version, commit = build_stamp().short.split("+")
    assert version == forge.__version__
    assert build_stamp().full == f"{version} \u00b7 {commit}"
    ancestor = subprocess.run(
        ["git", "merge-base", "--is-ancestor", commit, "HEAD"], cwd=package, check=False
    )
    assert ancestor.returncode == 0
    assert build_stamp() is build_stamp()


def test_a_folder_outside_git_has_an_unknown_commit(tmp_path: Path) -> None:
    assert commit_of(tmp_path) == UNKNOWN_COMMIT


def test_a_fresh_repository_gives_its_head(tmp_path: Path) -> None:
    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    git("init", "-q")
    git("commit", "-q", "--allow-empty", "-m", "first")
    assert commit_of(tmp_path) == git("rev-parse", "HEAD")[:7]
