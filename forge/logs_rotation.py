"""Rotating a log file that several processes append to (the supervisor, its workers, the
client verbs all write forge.log).

The standard `RotatingFileHandler` assumes it is the file's only writer: after another process
rotated, it would keep writing into `forge.log.1` and rotate that again. `SharedRotatingFileHandler`
adds the two things sharing needs: before each record it reopens the path when the file it has
open is no longer there (another process rotated), and it rotates under an exclusive `flock` on
the full file, checking again under the lock that nobody rotated while it waited. Every writer
opens with O_APPEND, so its stream's end is the file's end whoever wrote last.

A log says what a person did, so its files are theirs alone: created 0600 whatever the umask,
and one an older forge left open to others (0644) is closed when it is opened.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import logging
import logging.handlers
import os
import stat
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

    def __init__(self, path: Path, rotation: Rotation | None, *, delay: bool = False) -> None:
        super().__init__(
            path,
            maxBytes=rotation.max_bytes if rotation else 0,
            backupCount=rotation.backups if rotation else 0,
            encoding="utf-8",
            delay=delay,
        )

    def _open(self) -> io.TextIOWrapper:
        """The file for appending, 0600 (closed to others if an older forge made it 0644)."""
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        descriptor = os.open(self.baseFilename, flags, 0o600)
        if stat.S_IMODE(os.fstat(descriptor).st_mode) & 0o077:
            # Another user's file this process may write to is theirs to close.
            with contextlib.suppress(PermissionError):
                os.fchmod(descriptor, 0o600)
        return open(descriptor, "a", encoding=self.encoding, errors=self.errors)

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
