"""One `forge supervise` per state directory: the first holds `supervisor.lock`, a second is
refused with one line naming the first one's pid and URL.

Two supervisors on one state directory would share its token, its log and `listening.json`, and
the one that lost the port race would leave `listening.json` pointing at its dead port. The
lock is an exclusive `flock` on a file in the state directory, so it ends with the process that
holds it (a killed supervisor leaves no stale lock behind); the file says who holds it: its pid
at once, its page URL once it listens. Python opens the file non-inheritable, so no worker the
supervisor starts keeps the lock alive after it.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from forge.errors import UserError
from forge.files import write_atomic

LOCK_FILE = "supervisor.lock"
HOLDER_FILE = "supervisor.json"
"""Beside the lock: `{"pid", "url"}` of the supervisor that holds it (rewritten atomically, so
a reader never sees half of it)."""


class SupervisorRunning(UserError):
    """Another `forge supervise` already serves from this state directory."""


class StateLock:
    """The held lock; `listening` records the URL a refused second supervisor will name."""

    def __init__(self, state_dir: Path, fd: int) -> None:
        self._state_dir = state_dir
        self._fd = fd
        self._write({"pid": os.getpid(), "url": None})

    def listening(self, url: str) -> None:
        self._write({"pid": os.getpid(), "url": url})

    def release(self) -> None:
        (self._state_dir / HOLDER_FILE).unlink(missing_ok=True)
        os.close(self._fd)

    def _write(self, holder: dict[str, Any]) -> None:
        write_atomic(self._state_dir / HOLDER_FILE, json.dumps(holder).encode(), mode=0o600)


def hold(state_dir: Path) -> StateLock:
    """The state directory's lock, or `SupervisorRunning` naming its holder's pid and URL."""
    fd = os.open(state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SupervisorRunning(refusal(state_dir, _holder(state_dir))) from None
    return StateLock(state_dir, fd)


def refusal(state_dir: Path, holder: dict[str, Any]) -> str:
    """The one line a second supervisor prints: who serves, where, and what to do instead."""
    pid = holder.get("pid")
    url = holder.get("url")
    who = f"pid {pid}" if isinstance(pid, int) else "pid unknown"
    where = f"serves {url}" if isinstance(url, str) else "is starting"
    return (
        f"another forge supervise ({who}) {where} from {state_dir}; stop it first, or give this "
        "one its own state directory (XDG_STATE_HOME)"
    )


def _holder(state_dir: Path) -> dict[str, Any]:
    try:
        holder = json.loads((state_dir / HOLDER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}
