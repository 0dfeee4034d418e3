"""Cutting `git diff` output into bounded files of raw hunks: pure, lines in and a layer out.

`DiffReader.feed` takes the patch one line at a time (bytes, newline stripped) and says when the
layer is full, so the reader of git's pipe can stop and end git: a 5,000-file change costs the 100
files the layer carries, not the whole patch. Paths come from the `diff --git` header (its two
halves are the same path unless the file was renamed or copied, when the `rename`/`copy` lines say
which), unquoted the way git quotes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from forge.git import BINARY_PROBE
from forge.wire.git import (
    DIFF_BYTES_MAX,
    DIFF_FILES_MAX,
    FILE_BYTES_MAX,
    FILE_LINES_MAX,
    Capped,
    Clean,
    DiffFile,
    DiffLayer,
    Hunk,
    Line,
    Populated,
    Status,
)

_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_KINDS: dict[bytes, Literal["context", "added", "removed"]] = {
    b" ": "context",
    b"-": "removed",
    b"+": "added",
}
SUBMODULE_MODE = b"160000"


def unquote(text: str) -> str:
    """A path as git printed it: C-quoted (`"a\\tb"`, octal escapes for UTF-8 bytes) or bare."""
    if not (text.startswith('"') and text.endswith('"')):
        return text
    out = bytearray()
    body, index = text[1:-1], 0
    while index < len(body):
        char = body[index]
        if char != "\\":
            out += char.encode("utf-8")
            index += 1
        elif body[index + 1 : index + 2] in _ESCAPES:
            out.append(_ESCAPES[body[index + 1]])
            index += 2
        else:
            out.append(int(body[index + 1 : index + 4], 8))
            index += 4
    return out.decode("utf-8", "replace")


def header_paths(rest: str) -> tuple[str, str] | None:
    """The old and new path of `diff --git <rest>` when the two halves name one path."""
    middle = (len(rest) - 1) // 2
    if len(rest) % 2 == 0 or rest[middle] != " ":
        return None
    old, new = unquote(rest[:middle]), unquote(rest[middle + 1 :])
    if old[:2] != "a/" or new[:2] != "b/" or old[2:] != new[2:]:
        return None
    return old[2:], new[2:]


@dataclass
class _File:
    path: str = ""
    old_path: str | None = None
    status: Status = "modified"
    binary: bool = False
    submodule: bool = False
    truncated: bool = False
    hunks: list[Hunk] = field(default_factory=list)
    lines: int = 0
    size: int = 0
    old_mode: bytes = b""
    new_mode: bytes = b""
    old_line: int = 0
    new_line: int = 0

    def done(self) -> DiffFile:
        return DiffFile(
            path=self.path,
            old_path=self.old_path,
            status=self.status,
            binary=self.binary,
            submodule=self.submodule,
            truncated=self.truncated,
            hunks=self.hunks,
        )


class DiffReader:
    """One layer's files, fed `git diff` output line by line, within `forge.wire.git`'s caps."""

    def __init__(self) -> None:
        self.files: list[DiffFile] = []
        self.seen = 0
        """Files whose header was read, carried or not."""
        self.capped_files = False
        self.capped_bytes = False
        self._size = 0
        self._file: _File | None = None

    @property
    def full(self) -> bool:
        """No further file can be carried: the reader of git's pipe may stop."""
        return self.capped_files or self.capped_bytes

    def feed(self, raw: bytes) -> bool:
        """Take one line of the patch; False once the layer is full."""
        if raw.startswith(b"diff --git "):
            self._close()
            self.seen += 1
            if len(self.files) >= DIFF_FILES_MAX:
                self.capped_files = True
                return False
            self._file = _File()
            paths = header_paths(raw[11:].decode("utf-8", "replace"))
            if paths is not None:
                self._file.old_path, self._file.path = paths
            return True
        file = self._file
        if file is None:
            return not self.full
        if file.hunks or raw.startswith(b"@@"):
            self._body(file, raw)
        else:
            self._meta(file, raw)
        return not self.full

    def layer(self, files_total: int | None = None) -> DiffLayer:
        """The layer as read so far; `files_total` is the change's file count when known."""
        self._close()
        if not self.files and not self.seen:
            return Clean()
        return Populated(
            files=self.files,
            files_total=max(files_total or 0, self.seen),
            capped=Capped(files=self.capped_files, bytes=self.capped_bytes),
        )

    def add(self, file: DiffFile, size: int) -> bool:
        """Carry a file read elsewhere (an untracked one) of `size` text bytes; False when full."""
        self.seen += 1
        if len(self.files) >= DIFF_FILES_MAX:
            self.capped_files = True
        elif self._size + size > DIFF_BYTES_MAX:
            self.capped_bytes = True
        else:
            self._size += size
            self.files.append(file)
        return not self.full

    def _close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            if file.old_path == file.path and file.status not in ("renamed", "copied"):
                file.old_path = None
            self.files.append(file.done())

    def _meta(self, file: _File, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace")
        if text.startswith("new file mode "):
            file.status, file.new_mode = "added", raw[14:]
        elif text.startswith("deleted file mode "):
            file.status, file.old_mode = "deleted", raw[18:]
        elif text.startswith("old mode "):
            file.old_mode = raw[9:]
        elif text.startswith("new mode "):
            file.new_mode = raw[9:]
        elif text.startswith(("rename from ", "copy from ")):
            file.status = "renamed" if text.startswith("rename") else "copied"
            file.old_path = unquote(text.split(" ", 2)[2])
        elif text.startswith(("rename to ", "copy to ")):
            file.path = unquote(text.split(" ", 2)[2])
        elif text.startswith("index "):
            file.submodule = text.endswith(" 160000") or file.submodule
        elif text.startswith(("Binary files ", "GIT binary patch")):
            file.binary = True
        elif text.startswith(("--- ", "+++ ")) and not file.path:
            name = unquote(text[4:])
            if name != "/dev/null":
                file.path = name[2:]
        if SUBMODULE_MODE in (file.new_mode, file.old_mode):
            file.submodule = True

    def _body(self, file: _File, raw: bytes) -> None:
        hunk = _HUNK.match(raw)
        if hunk is not None:
            old_start, old_count, new_start, new_count, section = hunk.groups()
            file.old_line, file.new_line = int(old_start), int(new_start)
            if not file.truncated:
                file.hunks.append(
                    Hunk(
                        old_start=int(old_start),
                        old_count=int(old_count if old_count is not None else 1),
                        new_start=int(new_start),
                        new_count=int(new_count if new_count is not None else 1),
                        section=section.decode("utf-8", "replace"),
                        lines=[],
                    )
                )
            return
        kind = _KINDS.get(raw[:1])
        if kind is None:  # "\ No newline at end of file"
            return
        body = raw[1:]
        old = None if kind == "added" else file.old_line
        new = None if kind == "removed" else file.new_line
        file.old_line += old is not None
        file.new_line += new is not None
        if file.truncated or self.full:
            return
        if file.lines >= FILE_LINES_MAX or file.size + len(body) > FILE_BYTES_MAX:
            file.truncated = True
            return
        if self._size + len(body) > DIFF_BYTES_MAX:
            self.capped_bytes = file.truncated = True
            return
        file.lines += 1
        file.size += len(body)
        self._size += len(body)
        text = body.decode("utf-8", "replace")
        file.hunks[-1].lines.append(Line(kind=kind, text=text, old=old, new=new))


def untracked_file(path: str, data: bytes, *, whole: bool) -> tuple[DiffFile, int]:
    """An untracked file as an all-added hunk, from its first bytes (`whole`: all of them were
    read); the carried text's size comes back beside it. A NUL near the start makes it binary."""
    binary = b"\0" in data[:BINARY_PROBE]
    carried, size, truncated = ([], 0, False) if binary else _added(data, whole)
    hunk = Hunk(
        old_start=0, old_count=0, new_start=1, new_count=len(carried), section="", lines=carried
    )
    file = DiffFile(
        path=path,
        old_path=None,
        status="untracked",
        binary=binary,
        submodule=False,
        truncated=truncated,
        hunks=[hunk] if carried else [],
    )
    return file, size


def _added(data: bytes, whole: bool) -> tuple[list[Line], int, bool]:
    """The lines of a new file within a file's caps: the lines, their text's size, and whether
    the caps (or a read that stopped short) cut it."""
    lines = data.decode("utf-8", "replace").split("\n")
    if lines[-1] == "":
        lines.pop()
    carried: list[Line] = []
    size = 0
    for number, body in enumerate(lines, 1):
        length = len(body.encode("utf-8"))
        if len(carried) >= FILE_LINES_MAX or size + length > FILE_BYTES_MAX:
            return carried, size, True
        if not whole and number == len(lines):
            break  # the last line read may be cut short
        carried.append(Line(kind="added", text=body, old=None, new=number))
        size += length
    return carried, size, not whole
