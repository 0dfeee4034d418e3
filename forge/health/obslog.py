"""observations.log: the 5-column TSV ring the shim appends to with one printf.

Trimming is a two-generation rotate (`log` -> `log.1`, readers read both): a rename never loses a
concurrent append, where read-rewrite-rename does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from forge.health.verdict import Observation, format_line, parse_line

RING_LINES: Final = 500
"""Readers never see more than this many (the newest)."""
ROTATE_AT_LINES: Final = RING_LINES // 2
"""A generation is rotated out once it holds this many lines; the shim checks on every 16th call."""
LOG_NAME: Final = "observations.log"


def log_path(state_dir: Path) -> Path:
    return state_dir / LOG_NAME


def read(state_dir: Path) -> list[Observation]:
    """Both generations, oldest first, capped to the newest RING_LINES well-formed rows."""
    rows: list[Observation] = []
    for path in (state_dir / f"{LOG_NAME}.1", log_path(state_dir)):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            continue
        rows.extend(obs for obs in map(parse_line, text.splitlines()) if obs is not None)
    return rows[-RING_LINES:]


def append(state_dir: Path, obs: Observation) -> None:
    """The `record` door: the same one-write append the shim does, then rotate if due."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = log_path(state_dir)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, format_line(obs).encode())
    finally:
        os.close(fd)
    rotate_if_due(state_dir)


def rotate_if_due(state_dir: Path) -> None:
    path = log_path(state_dir)
    try:
        with path.open("rb") as handle:
            lines = sum(1 for _ in handle)
    except FileNotFoundError:
        return
    if lines >= ROTATE_AT_LINES:
        os.replace(path, state_dir / f"{LOG_NAME}.1")


def fingerprint(state_dir: Path) -> list[int]:
    """(inode, size, mtime_ns) of the live log: any append or rotate changes it, which is what
    invalidates a cached verdict."""
    try:
        info = log_path(state_dir).stat()
    except FileNotFoundError:
        return [0, 0, 0]
    return [info.st_ino, info.st_size, info.st_mtime_ns]


def reset(state_dir: Path) -> None:
    for name in (LOG_NAME, f"{LOG_NAME}.1"):
        (state_dir / name).unlink(missing_ok=True)
