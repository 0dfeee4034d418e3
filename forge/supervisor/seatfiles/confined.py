"""Reading one file confined to a set of roots, resolved once, component by component.

Nothing here follows a path the kernel resolves on its own: each component is opened with
`O_NOFOLLOW` relative to its parent's descriptor (`openat`), so a symlink is seen as one and its
target is checked against the roots before the walk goes on from the root it lands in. The final
file is the descriptor that was checked: its type and size are read from it (`fstat`) before any
byte is, and a FIFO opens without blocking (`O_NONBLOCK`) only to be refused. `..` is refused
outright rather than resolved, and a path is never URL-decoded (`%2e%2e` is a name like any other).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from forge.errors import PeerError

MAX_SYMLINKS = 40
"""As the kernel's own bound: a longer chain is refused as a loop."""
_DIRECTORY = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class ReadRefused(PeerError):
    """The client asked for a file it may not read (outside the roots, a link loop, not a
    regular file); `why` is the sentence its viewer draws."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@dataclass(frozen=True)
class Found:
    """The opened file before it is read: where it resolved to and how big it is."""

    path: Path
    size: int


def read_confined(
    roots: Sequence[Path],
    asked: str,
    *,
    max_bytes: int,
    accept: Callable[[Found], None] = lambda found: None,
) -> tuple[Found, bytes]:
    """The file `asked` names (relative to `roots[0]`, or absolute inside one of `roots`) and its
    bytes; `accept` may refuse it by its resolved path and size before anything is read."""
    real = [Path(os.path.realpath(root)) for root in roots]
    if not asked or "\0" in asked:
        raise ReadRefused("the path names no file")
    given = PurePosixPath(asked)
    if ".." in given.parts:
        raise ReadRefused(f"{asked}: `..` is not allowed in a document path")
    if not given.is_absolute():
        return _walk(asked, real, real[0], list(given.parts), max_bytes, accept)
    path = Path(os.path.normpath(asked))
    for named, resolved in zip(roots, real, strict=True):
        for base in (named, resolved):
            if path.is_relative_to(base):
                parts = list(path.relative_to(base).parts)
                return _walk(asked, real, resolved, parts, max_bytes, accept)
    raise ReadRefused(f"{asked} is outside the seat's tree and its document roots")


def _root_of(path: Path, roots: Sequence[Path]) -> int | None:
    for index, root in enumerate(roots):
        if path.is_relative_to(root):
            return index
    return None


def _open_root(asked: str, root: Path) -> int:
    try:
        return os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise ReadRefused(f"{asked}: {root} cannot be opened ({error.strerror})") from None


def _walk(
    asked: str,
    roots: list[Path],
    root: Path,
    parts: list[str],
    max_bytes: int,
    accept: Callable[[Found], None],
) -> tuple[Found, bytes]:
    hops = 0
    where = root
    fd = _open_root(asked, root)
    try:
        while parts:
            name = parts.pop(0)
            if name in ("", "."):
                continue
            last = not parts
            try:
                child = os.open(name, _FILE if last else _DIRECTORY, dir_fd=fd)
            except FileNotFoundError:
                raise ReadRefused(f"{asked}: no such file") from None
            except PermissionError:
                raise ReadRefused(f"{asked}: not readable (permission denied)") from None
            except OSError as error:
                if error.errno != errno.ELOOP:  # ELOOP: the last component is a symlink
                    raise ReadRefused(f"{asked}: cannot be read ({error.strerror})") from None
                child = os.open(name, _DIRECTORY, dir_fd=fd)
            mode = os.fstat(child).st_mode
            if stat.S_ISLNK(mode):
                os.close(child)
                hops += 1
                if hops > MAX_SYMLINKS:
                    raise ReadRefused(f"{asked}: too many symlinks")
                target = Path(os.path.normpath(where / os.readlink(name, dir_fd=fd)))
                landed = _root_of(target, roots)
                if landed is None:
                    raise ReadRefused(
                        f"{asked}: a symlink leads outside the seat's tree and its document roots"
                    )
                os.close(fd)
                fd, where = -1, roots[landed]
                fd = _open_root(asked, where)
                parts = [*target.relative_to(where).parts, *parts]
                continue
            if not last:
                os.close(fd)
                fd, where = child, where / name
                if not stat.S_ISDIR(mode):
                    raise ReadRefused(f"{asked}: {where.name} is not a folder")
                continue
            try:
                return _read(asked, child, where / name, max_bytes, accept)
            finally:
                os.close(child)
        raise ReadRefused(f"{asked} is a folder, not a file")
    finally:
        if fd >= 0:
            os.close(fd)


def _read(
    asked: str, fd: int, path: Path, max_bytes: int, accept: Callable[[Found], None]
) -> tuple[Found, bytes]:
    status = os.fstat(fd)
    if stat.S_ISDIR(status.st_mode):
        raise ReadRefused(f"{asked} is a folder, not a file")
    if not stat.S_ISREG(status.st_mode):
        raise ReadRefused(f"{asked} is not a regular file (a FIFO, socket or device)")
    found = Found(path, status.st_size)
    if status.st_size > max_bytes:
        raise ReadRefused(
            f"{asked} is {status.st_size} bytes, over the {_mib(max_bytes)} ceiling "
            "([documents] max_size_mib)"
        )
    accept(found)
    data = _read_all(fd, max_bytes + 1)
    if len(data) > max_bytes:
        raise ReadRefused(f"{asked} grew past the {_mib(max_bytes)} ceiling while it was read")
    return found, data


def _read_all(fd: int, limit: int) -> bytes:
    chunks, total = [], 0
    while total < limit and (chunk := os.read(fd, min(1 << 20, limit - total))):
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _mib(size: int) -> str:
    return f"{size / (1 << 20):g} MiB"
