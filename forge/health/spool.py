"""The write-ahead spool in `<project>/.forge/queue/`: one directory per project, a file per write.

`NNNNNN.seq` is created O_EXCL: that one syscall is the whole concurrency story, so racing gh
processes each get a distinct slot in a stable order. `NNNNNN.json` is written temp-then-rename,
`NNNNNN.d/body.md` holds the body verbatim, `handles.json` maps FORGE-Q<seq> to the real number,
`replay.log` has one TSV row per replay attempt. A high-water mark keeps seq numbers from ever
being reused, so a handle never becomes ambiguous.

Since every entry is written temp-then-rename, an entry file that does not read back as an entry
was damaged after the fact (a disk, an editor, a sync tool): it is reported as corrupt, replay
moves it aside to `NNNNNN.json.corrupt` (next to its slot and body), and nothing deletes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

import msgspec

from forge.files import write_atomic
from forge.health.atomic import write_json
from forge.health.settings import project_store

SEQ_WIDTH: Final = 6
HANDLES_NAME: Final = "handles.json"
REPLAY_LOG_NAME: Final = "replay.log"
HWM_NAME: Final = "hwm"
CRASHED_SLOT_AFTER_MS: Final = 60_000
CORRUPT_SUFFIX: Final = ".json.corrupt"
STATUSES: Final = frozenset({"pending", "set_aside"})
BREADCRUMB_NAME: Final = "replay-pending"
"""In the global state dir: the project roots with something pending. The shim stats it after
every successful call; its absence is how calls with nothing to drain pay nothing."""


@dataclass
class QueueEntry:
    seq: int
    kind: str
    repo: str | None
    host: str | None
    target: str | None
    handle: str | None
    """FORGE-Q<seq> for a create: what its dependents name."""
    depends_on: list[str]
    idempotency_key: str
    argv: list[str]
    """Replayable: the body points at the sidecar; the repo is passed as `-R` at replay time."""
    title: str | None
    has_body: bool
    enqueued_at: int
    project: str
    live_signal: str | None
    live_stderr: str
    attempts: int = 0
    status: str = "pending"
    """pending | set_aside (delivered entries leave the spool)."""
    reason: str | None = None
    landed_as: str | None = None
    """The real issue number or comment id a content match claimed, so no other entry claims it."""

    @property
    def name(self) -> str:
        return entry_name(self.seq)


@dataclass(frozen=True)
class CorruptEntry:
    """An entry file that does not read back as an entry: a write nobody can replay as it is."""

    seq: int
    path: Path
    problem: str

    @property
    def name(self) -> str:
        return entry_name(self.seq)

    @property
    def handle(self) -> str:
        """The handle a create in this slot was given, whatever the slot held."""
        return f"FORGE-Q{self.seq}"

    def describe(self) -> str:
        return f"{self.name} ({self.path}): {self.problem}"


def entry_name(seq: int) -> str:
    return f"q{seq:0{SEQ_WIDTH}d}"


def parse_entry(seq: int, data: bytes) -> QueueEntry | str:
    """The entry in slot `seq`, or what is wrong with the bytes found there."""
    if not data:
        return "empty file (0 bytes)"
    try:
        entry = msgspec.json.decode(data, type=QueueEntry)
    except msgspec.DecodeError as error:
        return f"not a queue entry ({len(data)} bytes): {error}"
    if entry.seq != seq:
        return f"holds entry {entry.seq}, not {seq}"
    if entry.status not in STATUSES:
        return f"unknown status {entry.status!r}"
    return entry


def queue_dir(root: Path) -> Path:
    return root / ".forge" / "queue"


def seq_name(seq: int) -> str:
    return f"{seq:0{SEQ_WIDTH}d}"


def body_path(root: Path, seq: int) -> Path:
    return queue_dir(root) / f"{seq_name(seq)}.d" / "body.md"


def _seqs(directory: Path, suffix: str) -> list[int]:
    found = []
    for path in directory.glob(f"*{suffix}"):
        stem = path.name[: -len(suffix)]
        if len(stem) == SEQ_WIDTH and stem.isdigit():
            found.append(int(stem))
    return sorted(found)


def ensure_queue_dir(root: Path) -> Path:
    """The queue directory, created inside `.forge` with its `.gitignore` (never shows in git)."""
    directory = queue_dir(root)
    project_store(root)
    directory.mkdir(exist_ok=True)
    return directory


def allocate(root: Path) -> int:
    """A fresh seq: one past everything ever handed out, claimed with O_EXCL."""
    directory = ensure_queue_dir(root)
    candidate = max([high_water_mark(root), *_seqs(directory, ".seq")]) + 1
    while True:
        try:
            fd = os.open(
                directory / f"{seq_name(candidate)}.seq",
                os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                0o644,
            )
        except FileExistsError:
            candidate += 1
            continue
        os.close(fd)
        return candidate


def high_water_mark(root: Path) -> int:
    try:
        return int((queue_dir(root) / HWM_NAME).read_text().strip() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def write_entry(root: Path, entry: QueueEntry) -> None:
    write_json(queue_dir(root) / f"{seq_name(entry.seq)}.json", asdict(entry))


def load_entry(root: Path, seq: int) -> QueueEntry | CorruptEntry | None:
    """Slot `seq`'s entry, or why it cannot be read; None when the slot holds no entry file."""
    directory = queue_dir(root)
    for path in (
        directory / f"{seq_name(seq)}.json",
        directory / f"{seq_name(seq)}{CORRUPT_SUFFIX}",
    ):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        parsed = parse_entry(seq, data)
        if path.name.endswith(CORRUPT_SUFFIX):
            if isinstance(parsed, QueueEntry):
                parsed = (
                    "moved aside as corrupt, but it now reads as an entry: "
                    f"rename it to {seq_name(seq)}.json to replay it"
                )
            return CorruptEntry(seq, path, parsed)
        return parsed if isinstance(parsed, QueueEntry) else CorruptEntry(seq, path, parsed)
    return None


def scan(root: Path) -> tuple[list[QueueEntry], list[CorruptEntry]]:
    """Every entry file in seq order: the readable entries (pending and set aside) and the
    corrupt ones (still in place or moved aside), so no spooled write goes unmentioned."""
    directory = queue_dir(root)
    good: list[QueueEntry] = []
    bad: list[CorruptEntry] = []
    for seq in sorted({*_seqs(directory, ".json"), *_seqs(directory, CORRUPT_SUFFIX)}):
        found = load_entry(root, seq)
        if isinstance(found, QueueEntry):
            good.append(found)
        elif found is not None:
            bad.append(found)
    return good, bad


def entries(root: Path) -> list[QueueEntry]:
    """Every readable entry, pending and set aside, in seq order."""
    return scan(root)[0]


def move_aside(corrupt: CorruptEntry) -> CorruptEntry:
    """`NNNNNN.json` becomes `NNNNNN.json.corrupt`: out of replay's way, kept for a person.

    Linked then unlinked, so an existing `.corrupt` file is never overwritten (then it stays put).
    """
    if corrupt.path.name.endswith(CORRUPT_SUFFIX):
        return corrupt
    aside = corrupt.path.with_name(f"{seq_name(corrupt.seq)}{CORRUPT_SUFFIX}")
    try:
        os.link(corrupt.path, aside)
    except FileExistsError:
        return corrupt
    corrupt.path.unlink()
    return CorruptEntry(corrupt.seq, aside, corrupt.problem)


def orphan_slots(root: Path, now_ms: int) -> tuple[list[int], list[int]]:
    """`.seq` files with no `.json`: (in flight, crashed). An allocation older than
    CRASHED_SLOT_AFTER_MS will never get its entry; replay skips it either way."""
    directory = queue_dir(root)
    in_flight: list[int] = []
    crashed: list[int] = []
    written = {*_seqs(directory, ".json"), *_seqs(directory, CORRUPT_SUFFIX)}
    for seq in sorted(set(_seqs(directory, ".seq")) - written):
        try:
            mtime_ms = (directory / f"{seq_name(seq)}.seq").stat().st_mtime_ns // 1_000_000
        except FileNotFoundError:
            continue
        (crashed if now_ms - mtime_ms > CRASHED_SLOT_AFTER_MS else in_flight).append(seq)
    return in_flight, crashed


def remove_delivered(root: Path, seq: int) -> None:
    """A delivered entry leaves the spool; the high-water mark keeps its seq from coming back."""
    directory = queue_dir(root)
    if seq > high_water_mark(root):
        write_atomic(directory / HWM_NAME, f"{seq}\n".encode())
    (directory / f"{seq_name(seq)}.json").unlink(missing_ok=True)
    shutil.rmtree(directory / f"{seq_name(seq)}.d", ignore_errors=True)
    (directory / f"{seq_name(seq)}.seq").unlink(missing_ok=True)


def load_handles(root: Path) -> dict[str, int]:
    try:
        data = json.loads((queue_dir(root) / HANDLES_NAME).read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return {str(key): int(value) for key, value in data.items()}


def save_handle(root: Path, handle: str, number: int) -> None:
    with _locked(ensure_queue_dir(root) / ".handles.lock"):
        handles = load_handles(root)
        handles[handle] = number
        write_json(queue_dir(root) / HANDLES_NAME, handles)


def append_replay_log(
    root: Path, ts_ms: int, seq: int, kind: str, outcome: str, reason: str
) -> None:
    """One TSV row `ts_ms, seq, kind, outcome, reason` per attempt."""
    clean = " ".join(reason.split())
    line = f"{ts_ms}\t{seq}\t{kind}\t{outcome}\t{clean}\n".encode()
    fd = os.open(queue_dir(root) / REPLAY_LOG_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def replay_log(root: Path) -> list[list[str]]:
    try:
        text = (queue_dir(root) / REPLAY_LOG_NAME).read_text(errors="replace")
    except FileNotFoundError:
        return []
    return [line.split("\t") for line in text.splitlines() if line.count("\t") == 4]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def breadcrumb_roots(state_dir: Path) -> list[Path]:
    try:
        text = (state_dir / BREADCRUMB_NAME).read_text()
    except FileNotFoundError:
        return []
    return [Path(line) for line in text.splitlines() if line]


def mark_pending(state_dir: Path, root: Path) -> None:
    _edit_breadcrumb(state_dir, root, present=True)


def clear_pending(state_dir: Path, root: Path) -> None:
    _edit_breadcrumb(state_dir, root, present=False)


def _edit_breadcrumb(state_dir: Path, root: Path, *, present: bool) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    with _locked(state_dir / f".{BREADCRUMB_NAME}.lock"):
        roots = [r for r in breadcrumb_roots(state_dir) if r != root]
        if present:
            roots.append(root)
        path = state_dir / BREADCRUMB_NAME
        if roots:
            write_atomic(path, "".join(f"{r}\n" for r in roots).encode())
        else:
            path.unlink(missing_ok=True)
