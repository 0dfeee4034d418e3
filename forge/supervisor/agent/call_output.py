"""A background call's output file, read confined to the task folder of the seat's own session.

Claude Code streams a background task's output to
`<base>/claude-<uid>/<slug>/<session id>/tasks/<task id>.output` (`base` is the
`CLAUDE_CODE_TMPDIR` the CLI runs with, else Node's temporary folder). The path is taken from the
CLI's own record of the call (never from a client, never parsed out of prose) and read only if it
has exactly that shape for this seat's session and task; each folder below `base` and the file are
then opened with `O_NOFOLLOW` relative to their parent (`openat`), so a link planted anywhere on
the way (the agent's tools can write there) is refused rather than followed. Only the file's tail
is read: the newest lines, at most `TAIL_BYTES`.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from forge.errors import PeerError
from forge.supervisor.agent.seat import AgentSeat
from forge.wire import agent as wire
from forge.wire.agent import NoOutput

TAIL_BYTES = 256 * 1024
"""The most of a file's end one read carries."""

_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class OutputRefused(PeerError):
    """The output cannot be read: `reason` is the wire's word, `why` the sentence."""

    def __init__(self, reason: NoOutput, why: str) -> None:
        super().__init__(why)
        self.reason, self.why = reason, why


def answer(
    seat: AgentSeat, asked: wire.ReadCallOutput, environ: Mapping[str, str]
) -> wire.CallOutput:
    """`read_call_output`'s answer: the call's output tail, or the reason there is none."""
    call_ = seat.calls.get(asked.id)

    def refused(reason: wire.NoOutput, why: str, task_id: str | None = None) -> wire.CallOutput:
        return wire.CallOutput(
            key=seat.key, id=asked.id, task_id=task_id, lines=[], truncated=False,
            running=False, reason=reason, why=why,
        )  # fmt: skip

    if call_ is None:
        return refused("no_call", f"no call {asked.id} of seat {seat.key} is known to have output")
    if call_.task_id is None or call_.session_id is None:
        return refused("not_background", f"call {asked.id} did not run in the background")
    base = tmp_base(environ)
    try:
        parts = task_parts(base, os.getuid(), call_.session_id, call_.task_id, call_.output_file)
        lines, truncated = read_tail(base, parts, asked.lines)
    except OutputRefused as refusal:
        return refused(refusal.reason, refusal.why, call_.task_id)
    return wire.CallOutput(
        key=seat.key, id=asked.id, task_id=call_.task_id, lines=lines, truncated=truncated,
        running=call_.running, reason=None, why=None,
    )  # fmt: skip


def tmp_base(environ: Mapping[str, str]) -> Path:
    """Where the CLI keeps its task files, found as it finds them: `CLAUDE_CODE_TMPDIR`, else
    Node's `os.tmpdir()` (`TMPDIR`, `TMP`, `TEMP`, else `/tmp`)."""
    for name in ("CLAUDE_CODE_TMPDIR", "TMPDIR", "TMP", "TEMP"):
        if environ.get(name):
            return Path(environ[name].rstrip("/") or "/")
    return Path("/tmp")


def task_parts(base: Path, uid: int, session_id: str, task_id: str, named: str | None) -> list[str]:
    """The folders and file below `base` that hold `task_id`'s output in `session_id`: the path
    the CLI `named`, or, before it named one, the one folder matching the slug's wildcard."""
    if not _ID.match(task_id) or not _ID.match(session_id):
        raise OutputRefused("no_path", f"task {task_id!r} of session {session_id!r} has no file")
    tail = [session_id, "tasks", f"{task_id}.output"]
    if named is None:
        found = sorted((base / f"claude-{uid}").glob(f"*/{session_id}/tasks/{task_id}.output"))
        if len(found) != 1:
            raise OutputRefused("no_path", f"task {task_id} has no output file")
        return [f"claude-{uid}", found[0].parent.parent.parent.name, *tail]
    path = PurePosixPath(named)
    if not path.is_absolute() or ".." in path.parts or not path.is_relative_to(base):
        raise OutputRefused("no_path", f"{named} is not inside {base}")
    parts = list(path.relative_to(base).parts)
    if len(parts) != 5 or parts[0] != f"claude-{uid}" or parts[2:] != tail:
        raise OutputRefused(
            "no_path", f"{named} is not task {task_id}'s output file of session {session_id}"
        )
    return parts


def read_tail(base: Path, parts: list[str], lines: int) -> tuple[list[str], bool]:
    """The newest `lines` lines of the file at `base/parts` (opened link-free), and whether
    older ones were left out."""
    try:
        fd = os.open(base, _FOLDER & ~os.O_NOFOLLOW)
    except OSError as error:
        raise OutputRefused("no_path", f"{base} cannot be opened ({error.strerror})") from None
    try:
        for index, name in enumerate(parts):
            parent, fd = fd, -1
            fd = _open_in(parent, name, _FILE if index == len(parts) - 1 else _FOLDER, base, parts)
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise OutputRefused("unreadable", f"{_shown(base, parts)} is not a regular file")
        start = max(0, status.st_size - TAIL_BYTES)
        data = os.pread(fd, TAIL_BYTES, start)
    finally:
        if fd >= 0:
            os.close(fd)
    text = data.decode("utf-8", errors="replace")
    rows = text.splitlines()
    if start > 0 and rows:
        rows = rows[1:]  # the first row was cut by the byte bound
    return rows[-lines:], start > 0 or len(rows) > lines


def _open_in(parent: int, name: str, flags: int, base: Path, parts: list[str]) -> int:
    """`name` opened inside `parent` without following a link; `parent` is closed."""
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        raise OutputRefused("no_path", f"{_shown(base, parts)} does not exist") from None
    except OSError as error:
        # ELOOP (the last component is a link) or ENOTDIR (a folder swapped for a link).
        raise OutputRefused(
            "unreadable",
            f"{_shown(base, parts)}: {name} is a link or not readable ({error.strerror})",
        ) from None
    finally:
        os.close(parent)


def _shown(base: Path, parts: list[str]) -> str:
    return str(base.joinpath(*parts))
