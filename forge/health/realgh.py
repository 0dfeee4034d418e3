"""Finding and running the real gh, around every copy of the shim.

The probe and replay call the real binary directly: a replay that went back through the shim
could re-spool its own failures, and a probe through the shim would be recorded twice.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from forge.clock import Clock, epoch_ms
from forge.errors import UserError
from forge.health import obslog
from forge.health.signals import Signal, classify_call
from forge.health.verdict import Observation

SHIM_MARKER: Final = b"forge-gh-shim:v1"
"""Sits in the shim's first bytes; any file carrying it is a shim, never the real gh."""
MARKER_SCAN_BYTES: Final = 512


class NoRealGhError(UserError):
    """Nothing on PATH but copies of the shim."""

    exit_code = 127


def is_shim(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return SHIM_MARKER in handle.read(MARKER_SCAN_BYTES)
    except OSError:
        return False


def find_real_gh(path_env: str | None = None) -> Path:
    """The first executable `gh` on PATH that is not a shim, as the shim itself finds it."""
    search = os.environ.get("PATH", "") if path_env is None else path_env
    for directory in search.split(os.pathsep):
        candidate = Path(directory or ".") / "gh"
        if candidate.is_file() and os.access(candidate, os.X_OK) and not is_shim(candidate):
            return candidate
    raise NoRealGhError("no real gh found on PATH (only forge's shim); install gh or fix PATH")


@dataclass(frozen=True)
class CallResult:
    rc: int
    stdout: bytes
    stderr: bytes
    ms: int
    signal: Signal


def subcommand_of(argv: Sequence[str]) -> str:
    """Column 5 of observations.log, the words the shim writes: `issue list`, `api rate_limit`."""
    words = [word for word in argv[:2] if _clean_word(word)]
    if not words or words[0] != argv[0]:
        return "?"
    if len(words) == 2 and not words[1].startswith("-"):
        return f"{words[0]} {words[1]}"
    return words[0]


def _clean_word(word: str) -> bool:
    return bool(word) and all(ch.isascii() and (ch.isalnum() or ch in "_.-") for ch in word)


def run(
    gh: Path,
    argv: Sequence[str],
    *,
    state_dir: Path,
    clock: Clock,
    timeout_s: float | None = None,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> CallResult:
    """Run the real gh, classify the outcome and record it through the `record` door.

    A timeout is a network failure: the forge did not answer in time.
    """
    started = clock.monotonic()
    try:
        done = subprocess.run(
            [str(gh), *argv],
            input=stdin if stdin is not None else b"",
            capture_output=True,
            timeout=timeout_s,
            env=None if env is None else dict(env),
            cwd=cwd,
            check=False,
        )
    except subprocess.TimeoutExpired:
        rc, out, err = 124, b"", f"forge: gh did not answer within {timeout_s}s\n".encode()
        signal: Signal = "net"
    else:
        rc = done.returncode if done.returncode >= 0 else 128 - done.returncode
        out, err = done.stdout, done.stderr
        signal = classify_call(rc, err.decode("utf-8", "replace"))
    ms = max(0, int((clock.monotonic() - started) * 1000))
    obslog.append(
        state_dir, Observation(epoch_ms(clock), rc, ms, signal, subcommand_of(list(argv)))
    )
    return CallResult(rc, out, err, ms, signal)
