"""The build stamp: "X.Y.Z · sha7" and "X.Y.Z+sha7", the sha read from real git."""

from __future__ import annotations

import subprocess
from pathlib import Path

import forge
from forge.config import build_stamp
from forge.config.stamp import UNKNOWN_COMMIT, commit_of, stamp_for


def test_the_stamp_formats_full_and_short() -> None:
    assert stamp_for("1.1.25", "abc1234") == ("1.1.25 \u00b7 abc1234", "1.1.25+abc1234")


def test_the_stamp_names_this_version_and_checkout() -> None:
    package = Path(forge.__file__).parent
    head = subprocess.run(
        ["git", "rev-parse", "--short=7", "HEAD"],
        cwd=package,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert build_stamp() == stamp_for(forge.__version__, head)
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
