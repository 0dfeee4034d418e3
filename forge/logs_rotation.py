"""Rotating a log file that several processes append to (the supervisor, its workers, the
client verbs all write forge.log).

The standard `RotatingFileHandler` assumes it is the file's only writer: after another process
rotated, it would keep writing into `forge.log.1` and rotate that again. `SharedRotatingFileHandler`
adds the two things sharing needs: before each record it reopens the path when the file it has
open is no longer there (another process rotated), and it rotates under an exclusive `flock` on
the full file, checking again under the lock that nobody rotated while it waited. Every writer
opens with O_APPEND, so its stream's end is the file's end whoever wrote last.
"""

from __future__ import annotations

import fcntl
import logging
import logging.handlers
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Rotation:
    """When forge.log is renamed to forge.log.1 (the older copies shifting to .2 ... .backups,
    the oldest deleted): once a record would take it to `max_bytes`."""

    max_bytes: int
    backups: int

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.backups < 1:
            raise ValueError(f"a rotation needs a bound and a copy to keep, not {self}")


class SharedRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """Appends to `path`, rotating it per `rotation`; with none, it never rotates the file but
    follows the rotations other processes make."""

    def __init__(self, path: Path, rotation: Rotation | None) -> None:
        super().__init__(
            path,
            maxBytes=rotation.max_bytes if rotation else 0,
            backupCount=rotation.backups if rotation else 0,
            encoding="utf-8",
        )

    def shouldRollover(self, record: logging.LogRecord) -> bool:
        self._follow()
        return bool(super().shouldRollover(record))

    def doRollover(self) -> None:
        if self.stream is None:
            self.stream = self._open()
        # The lock is held on a duplicate descriptor: the rollover closes the stream's own one
        # before it renames, and the lock must last until the new file is in place.
        lock = os.dup(self.stream.fileno())
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self._moved():
                self._reopen()
            else:
                super().doRollover()
        finally:
            os.close(lock)

    def _moved(self) -> bool:
        """Whether the path now names another file than the one open here (or none)."""
        assert self.stream is not None
        try:
            return not os.path.samestat(os.stat(self.baseFilename), os.fstat(self.stream.fileno()))
        except FileNotFoundError:
            return True

    def _follow(self) -> None:
        if self.stream is not None and self._moved():
            self._reopen()

    def _reopen(self) -> None:
        if self.stream is not None:
            self.stream.close()
        self.stream = self._open()
