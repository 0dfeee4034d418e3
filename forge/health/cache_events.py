"""cache-events.log: every serve (and every refusal of a stale copy), for the cache block.

The block is reported apart from availability: the forge can be operational now while the answers
a run acted on came from cache minutes ago.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

EVENTS_NAME: Final = "cache-events.log"
ROTATE_AT_BYTES: Final = 64 * 1024
"""Then the log becomes `.1` (readers read both): serves older than any window are worthless."""


def append(state_dir: Path, ts_ms: int, event: str, age_s: int, signal: str, project: Path) -> None:
    """One TSV row `ts_ms, event, age_s, signal, project`, one O_APPEND write."""
    line = f"{ts_ms}\t{event}\t{age_s}\t{signal}\t{project}\n".encode()
    path = state_dir / EVENTS_NAME
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        full = os.fstat(fd).st_size >= ROTATE_AT_BYTES
    finally:
        os.close(fd)
    if full:
        os.replace(path, state_dir / f"{EVENTS_NAME}.1")


def block(state_dir: Path, now_ms: int, window_s: int) -> dict[str, Any]:
    """Serves and stale refusals inside the window, with the oldest copy handed out."""
    served = stale = 0
    oldest_served_age: int | None = None
    last_served_ms: int | None = None
    text = ""
    for name in (f"{EVENTS_NAME}.1", EVENTS_NAME):
        try:
            text += (state_dir / name).read_text(errors="replace")
        except FileNotFoundError:
            continue
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) != 5 or not fields[0].isdigit() or not fields[2].isdigit():
            continue
        ts_ms, age_s = int(fields[0]), int(fields[2])
        if ts_ms < now_ms - window_s * 1000:
            continue
        if fields[1] == "served":
            served += 1
            oldest_served_age = max(oldest_served_age or 0, age_s)
            last_served_ms = max(last_served_ms or 0, ts_ms)
        elif fields[1] == "stale":
            stale += 1
    return {
        "served": served,
        "stale_refused": stale,
        "oldest_served_age_s": oldest_served_age,
        "last_served_ms": last_served_ms,
        "window_s": window_s,
    }
