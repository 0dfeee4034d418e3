"""Atomic file writes: a reader sees the old bytes or the new, never half (temp, fsync, rename)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, mode: int = 0o666) -> None:
    """Write `data` to `path` through a temp file beside it, then rename it over `path`.

    The temp name carries the pid, so two processes writing one file never share a temp file;
    the parent folder is created if missing. The file is created with `mode` less the umask
    (0o600: its owner's alone, whatever the umask).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
        with open(os.open(temp, flags, mode), "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        # A full disk leaves no half-written temp file behind.
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
