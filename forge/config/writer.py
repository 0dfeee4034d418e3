"""Replacing forge.toml: temp file, fsync, fingerprint checked again, rename; never a partial file.

The file is written where it really lives (through a symlink, which stays a symlink), in its own
mode and owner, by a temp file in the same folder that is renamed over it. The fingerprint the save
was made against is read again after the temp file exists and just before the rename, so an editor
that replaced the file while the temp was being written wins and the save is refused as stale.
(A private temp-then-rename: the fingerprint check between the two steps is what a general atomic
write helper does not have.)
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path

from forge.config.loader import ConfigError, fingerprint_of, read_raw


class WriteRefused(Exception):
    """Nothing was written: `reason` is `stale` (the file moved) or `io` (it could not be)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def read_current(path: Path) -> bytes:
    """The file's bytes as a save starts from them (empty when it is missing)."""
    try:
        return read_raw(path)
    except ConfigError as error:
        raise WriteRefused("io", str(error)) from None


def replace_file(
    path: Path,
    data: bytes,
    fingerprint: str,
    *,
    before_rename: Callable[[], None] | None = None,
) -> None:
    """Write `data` over `path` if its text still hashes to `fingerprint`, else `WriteRefused`.

    `before_rename` runs after the temp file is complete and before the check (a test's seam for
    the editor that races the save)."""
    target = Path(os.path.realpath(path))
    temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        try:
            _write_temp(temp, target, data)
        except OSError as error:
            raise WriteRefused("io", f"{temp}: cannot write: {_reason(error)}") from None
        if before_rename is not None:
            before_rename()
        if fingerprint_of(read_current(path)) != fingerprint:
            raise WriteRefused(
                "stale", f"{path} changed while the save was written; reload the settings"
            )
        try:
            os.replace(temp, target)
            _sync_folder(target.parent)
        except OSError as error:
            raise WriteRefused("io", f"{target}: cannot replace: {_reason(error)}") from None
    finally:
        with contextlib.suppress(OSError):  # renamed, or never created
            temp.unlink()


def _write_temp(temp: Path, target: Path, data: bytes) -> None:
    """The new text in `temp`, synced, with the target's mode and owner (a new file: umask's)."""
    try:
        kept = target.stat()
    except FileNotFoundError:
        kept = None
        target.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o600 if kept else 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if kept is not None:
            os.fchmod(fd, kept.st_mode & 0o7777)
            mine = os.fstat(fd)
            if (mine.st_uid, mine.st_gid) != (kept.st_uid, kept.st_gid):
                os.fchown(fd, kept.st_uid, kept.st_gid)
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_folder(folder: Path) -> None:
    """The rename itself is durable once the folder is synced."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _reason(error: OSError) -> str:
    return (error.strerror or str(error)).lower()
