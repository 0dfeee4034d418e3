"""The build stamp a client shows as the server's build: "X.Y.Z · sha7" and "X.Y.Z+sha7" (O-G2).

The commit is read once per process from git in the package's own folder, so a checkout names its
HEAD wherever forge is started from; an install outside git says `unknown`.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import NamedTuple

from forge import __version__
from forge.git import profile_env

UNKNOWN_COMMIT = "unknown"


class BuildStamp(NamedTuple):
    full: str
    """`forge_version` in the greeting: "0.1.0 · abc1234" (U+00B7 between)."""
    short: str
    """`forge_version_short` and the settings document's `version`: "0.1.0+abc1234"."""


def stamp_for(version: str, commit: str) -> BuildStamp:
    return BuildStamp(f"{version} \u00b7 {commit}", f"{version}+{commit}")


@functools.cache
def build_stamp() -> BuildStamp:
    """This build's stamp, computed once: git is asked at most once per process."""
    return stamp_for(__version__, commit_of(Path(__file__).resolve().parent))


def commit_of(folder: Path) -> str:
    """HEAD's 7-digit sha for the checkout holding `folder`, or `unknown` outside git (asked
    under `forge.git`'s profile, as every git forge runs)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short=7", "HEAD"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            env=profile_env(),
        )
    except (OSError, subprocess.TimeoutExpired):
        return UNKNOWN_COMMIT
    sha = done.stdout.strip()
    return sha if done.returncode == 0 and sha else UNKNOWN_COMMIT
