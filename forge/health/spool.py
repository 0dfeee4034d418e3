"""The write-ahead spool: one directory per project in forge's state directory, a file per write.

The queue lives in `$FORGE_STATE/queue/<project>-<hash of its real path>/`, never inside the
project: a repository can commit any file in its own tree, and replay runs what an entry says.
Each entry is sealed (`queue_seal`) and its argv must have a shape the shim queues
(`write_shapes`); one that fails either check is untrusted: reported, moved aside to
`NNNNNN.json.untrusted`, never run. So is every entry file in the project's own `.forge/queue`
(where the queue used to live): whoever wrote it, forge cannot vouch for it.

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
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import Final, Literal

import msgspec

from forge.files import write_atomic
from forge.health import queue_seal, write_shapes
from forge.health.atomic import write_json

SEQ_WIDTH: Final = 6
HANDLES_NAME: Final = "handles.json"
REPLAY_LOG_NAME: Final = "replay.log"
HWM_NAME: Final = "hwm"
CRASHED_SLOT_AFTER_MS: Final = 60_000
QUEUES_NAME: Final = "queue"
"""In the global state dir: one queue directory per project."""
IN_PROJECT: Final = Path(".forge") / "queue"
"""Where the queue used to live, inside the project: entry files there are reported and moved
aside, never read as entries."""
CORRUPT_SUFFIX: Final = ".json.corrupt"
UNTRUSTED_SUFFIX: Final = ".json.untrusted"
PRIVATE: Final = 0o600
PRIVATE_DIR: Final = 0o700
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
    body_sha256: str | None = None
    """The body's SHA-256, so the seal covers the body: replay refuses a body changed since."""
    mac: str = ""
    """The seal over every other field (`queue_seal`), renewed on every write."""

    @property
    def name(self) -> str:
        return entry_name(self.seq)


Verdict = Literal["corrupt", "untrusted"]
ASIDE_SUFFIXES: Final[dict[Verdict, str]] = {
    "corrupt": CORRUPT_SUFFIX,
    "untrusted": UNTRUSTED_SUFFIX,
}


@dataclass(frozen=True)
class RefusedEntry:
    """An entry file replay never runs: corrupt (it does not read back as an entry) or untrusted
    (it does not prove forge wrote it, or its argv is no write the queue replays)."""

    seq: int
    path: Path
    problem: str
    verdict: Verdict = "corrupt"

    @property
    def name(self) -> str:
        return entry_name(self.seq)

    @property
    def handle(self) -> str:
        """The handle a create in this slot was given, whatever the slot held."""
        return f"FORGE-Q{self.seq}"

    @property
    def moved_aside(self) -> bool:
        return self.path.name.endswith((CORRUPT_SUFFIX, UNTRUSTED_SUFFIX))

    def describe(self) -> str:
        return f"{self.name} ({self.path}): {self.problem}"


@dataclass(frozen=True)
class ProjectQueue:
    """One project's queue: kept in forge's state directory, found by the project's real path
    (so a shell's symlinked $PWD and Python's getcwd name the same queue)."""

    state_dir: Path
    project: Path

    @classmethod
    def of(cls, state_dir: Path, project: Path) -> ProjectQueue:
        return cls(state_dir, project.resolve())

    @cached_property
    def directory(self) -> Path:
        digest = hashlib.sha256(os.fsencode(self.project)).hexdigest()[:16]
        name = re.sub(r"[^A-Za-z0-9._-]", "_", self.project.name)[:40] or "root"
        return self.state_dir / QUEUES_NAME / f"{name}-{digest}"

    @property
    def in_project(self) -> Path:
        return self.project / IN_PROJECT

    @cached_property
    def key(self) -> bytes:
        return queue_seal.load_key(self.state_dir)


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


def trust_problem(queue: ProjectQueue, entry: QueueEntry) -> str | None:
    """Why replay must not run this entry though it reads back, or None: it must be sealed with
    this forge's key for this project, with its body unchanged, and have an allowed shape."""
    if entry.project != str(queue.project):
        return f"it was queued for {entry.project}, not this project"
    if not entry.mac:
        return "it carries no seal: not written by this forge"
    if not queue_seal.verifies(queue.key, asdict(entry), entry.mac):
        return (
            f"its seal does not match (HMAC-SHA256 under {queue_seal.key_path(queue.state_dir)}): "
            "not written by this forge, or changed since"
        )
    body = body_path(queue, entry.seq)
    if entry.has_body != (entry.body_sha256 is not None):
        return "its body is half declared (has_body without body_sha256, or the reverse)"
    if entry.body_sha256 is not None:
        try:
            digest = hashlib.sha256(body.read_bytes()).hexdigest()
        except FileNotFoundError:
            return f"its body file {body} is missing"
        if digest != entry.body_sha256:
            return f"its body file {body} changed since it was queued"
    shape = write_shapes.refusal(
        kind=entry.kind,
        argv=entry.argv,
        repo=entry.repo,
        host=entry.host,
        body_file=str(body) if entry.has_body else None,
    )
    return None if shape is None else f"outside the allow-list: {shape}"


def seq_name(seq: int) -> str:
    return f"{seq:0{SEQ_WIDTH}d}"


def body_path(queue: ProjectQueue, seq: int) -> Path:
    return queue.directory / f"{seq_name(seq)}.d" / "body.md"


def write_body(queue: ProjectQueue, seq: int, body: bytes) -> Path:
    """The body's sidecar, private; written before its entry, so a crash leaves a crashed slot."""
    path = body_path(queue, seq)
    path.parent.mkdir(mode=PRIVATE_DIR, exist_ok=True)
    with open(path, "wb", opener=lambda name, flags: os.open(name, flags, PRIVATE)) as handle:
        handle.write(body)
    return path


def _seqs(directory: Path, suffix: str) -> list[int]:
    found = []
    for path in directory.glob(f"*{suffix}"):
        stem = path.name[: -len(suffix)]
        if len(stem) == SEQ_WIDTH and stem.isdigit():
            found.append(int(stem))
    return sorted(found)


def ensure_queue_dir(queue: ProjectQueue) -> Path:
    """The queue directory, private to this user (0700), as is the directory holding it."""
    queues = queue.state_dir / QUEUES_NAME
    queues.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    queue.directory.mkdir(mode=PRIVATE_DIR, exist_ok=True)
    return queue.directory


def allocate(queue: ProjectQueue) -> int:
    """A fresh seq: one past everything ever handed out, claimed with O_EXCL."""
    directory = ensure_queue_dir(queue)
    candidate = max([high_water_mark(queue), *_seqs(directory, ".seq")]) + 1
    while True:
        try:
            fd = os.open(
                directory / f"{seq_name(candidate)}.seq",
                os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                PRIVATE,
            )
        except FileExistsError:
            candidate += 1
            continue
        os.close(fd)
        return candidate


def high_water_mark(queue: ProjectQueue) -> int:
    try:
        return int((queue.directory / HWM_NAME).read_text().strip() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def write_entry(queue: ProjectQueue, entry: QueueEntry) -> None:
    """Sealed afresh each time: replay's own updates (attempts, status) keep it trusted."""
    entry.mac = queue_seal.seal(queue.key, asdict(entry))
    write_json(queue.directory / f"{seq_name(entry.seq)}.json", asdict(entry))


def load_entry(queue: ProjectQueue, seq: int) -> QueueEntry | RefusedEntry | None:
    """Slot `seq`'s entry, or why replay refuses it; None when the slot holds no entry file."""
    directory = queue.directory
    for path in (
        directory / f"{seq_name(seq)}.json",
        directory / f"{seq_name(seq)}{CORRUPT_SUFFIX}",
        directory / f"{seq_name(seq)}{UNTRUSTED_SUFFIX}",
    ):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        judged = _judge(queue, seq, data)
        if path.name.endswith(CORRUPT_SUFFIX) or path.name.endswith(UNTRUSTED_SUFFIX):
            verdict: Verdict = "corrupt" if path.name.endswith(CORRUPT_SUFFIX) else "untrusted"
            if isinstance(judged, QueueEntry):
                problem = (
                    f"moved aside as {verdict}, but it now reads back and verifies: "
                    f"rename it to {seq_name(seq)}.json to replay it"
                )
            else:
                problem = judged[1]
            return RefusedEntry(seq, path, problem, verdict)
        if isinstance(judged, QueueEntry):
            return judged
        return RefusedEntry(seq, path, judged[1], judged[0])
    return None


def _judge(queue: ProjectQueue, seq: int, data: bytes) -> QueueEntry | tuple[Verdict, str]:
    parsed = parse_entry(seq, data)
    if isinstance(parsed, str):
        return "corrupt", parsed
    problem = trust_problem(queue, parsed)
    return parsed if problem is None else ("untrusted", problem)


def scan(queue: ProjectQueue) -> tuple[list[QueueEntry], list[RefusedEntry]]:
    """Every entry file in seq order: the entries replay may run (pending and set aside) and the
    refused ones (corrupt or untrusted, still in place or moved aside), so no file goes
    unmentioned."""
    directory = queue.directory
    good: list[QueueEntry] = []
    bad: list[RefusedEntry] = []
    seqs = {*_seqs(directory, ".json"), *_seqs(directory, CORRUPT_SUFFIX)}
    for seq in sorted(seqs | set(_seqs(directory, UNTRUSTED_SUFFIX))):
        found = load_entry(queue, seq)
        if isinstance(found, QueueEntry):
            good.append(found)
        elif found is not None:
            bad.append(found)
    return good, bad


def entries(queue: ProjectQueue) -> list[QueueEntry]:
    """Every entry replay may run, pending and set aside, in seq order."""
    return scan(queue)[0]


def in_project_entries(queue: ProjectQueue) -> list[RefusedEntry]:
    """Entry files inside the project's own `.forge/queue`: untrusted, whatever they say, since
    a repository can commit them (and forge, which keeps its queue elsewhere, never wrote them
    there since; older forges did, and such a write has to be redone by hand)."""
    directory = queue.in_project
    problem = (
        f"found in the project ({directory}), where a repository can commit files; "
        f"forge keeps the queue it writes in {queue.directory}"
    )
    found = [
        RefusedEntry(seq, directory / f"{seq_name(seq)}{suffix}", problem, "untrusted")
        for suffix in (".json", CORRUPT_SUFFIX, UNTRUSTED_SUFFIX)
        for seq in _seqs(directory, suffix)
    ]
    return sorted(found, key=lambda item: (item.seq, item.path.name))


def move_aside(refused: RefusedEntry) -> RefusedEntry:
    """`NNNNNN.json` becomes `NNNNNN.json.corrupt` or `.json.untrusted`: out of replay's way,
    kept for a person. Linked then unlinked, so an existing file there is never overwritten
    (then it stays put)."""
    if refused.moved_aside:
        return refused
    suffix = ASIDE_SUFFIXES[refused.verdict]
    aside = refused.path.with_name(f"{seq_name(refused.seq)}{suffix}")
    try:
        os.link(refused.path, aside)
    except FileExistsError:
        return refused
    refused.path.unlink()
    return RefusedEntry(refused.seq, aside, refused.problem, refused.verdict)


def orphan_slots(queue: ProjectQueue, now_ms: int) -> tuple[list[int], list[int]]:
    """`.seq` files with no entry file: (in flight, crashed). An allocation older than
    CRASHED_SLOT_AFTER_MS will never get its entry; replay skips it either way."""
    directory = queue.directory
    in_flight: list[int] = []
    crashed: list[int] = []
    written = {
        *_seqs(directory, ".json"),
        *_seqs(directory, CORRUPT_SUFFIX),
        *_seqs(directory, UNTRUSTED_SUFFIX),
    }
    for seq in sorted(set(_seqs(directory, ".seq")) - written):
        try:
            mtime_ms = (directory / f"{seq_name(seq)}.seq").stat().st_mtime_ns // 1_000_000
        except FileNotFoundError:
            continue
        (crashed if now_ms - mtime_ms > CRASHED_SLOT_AFTER_MS else in_flight).append(seq)
    return in_flight, crashed


def remove_delivered(queue: ProjectQueue, seq: int) -> None:
    """A delivered entry leaves the spool; the high-water mark keeps its seq from coming back."""
    directory = queue.directory
    if seq > high_water_mark(queue):
        write_atomic(directory / HWM_NAME, f"{seq}\n".encode())
    (directory / f"{seq_name(seq)}.json").unlink(missing_ok=True)
    shutil.rmtree(directory / f"{seq_name(seq)}.d", ignore_errors=True)
    (directory / f"{seq_name(seq)}.seq").unlink(missing_ok=True)


def load_handles(queue: ProjectQueue) -> dict[str, int]:
    try:
        data = json.loads((queue.directory / HANDLES_NAME).read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return {str(key): int(value) for key, value in data.items()}


def save_handle(queue: ProjectQueue, handle: str, number: int) -> None:
    with _locked(ensure_queue_dir(queue) / ".handles.lock"):
        handles = load_handles(queue)
        handles[handle] = number
        write_json(queue.directory / HANDLES_NAME, handles)


def append_replay_log(
    queue: ProjectQueue, ts_ms: int, seq: int, kind: str, outcome: str, reason: str
) -> None:
    """One TSV row `ts_ms, seq, kind, outcome, reason` per attempt."""
    clean = " ".join(reason.split())
    line = f"{ts_ms}\t{seq}\t{kind}\t{outcome}\t{clean}\n".encode()
    path = ensure_queue_dir(queue) / REPLAY_LOG_NAME
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def replay_log(queue: ProjectQueue) -> list[list[str]]:
    try:
        text = (queue.directory / REPLAY_LOG_NAME).read_text(errors="replace")
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
        roots = [r for r in breadcrumb_roots(state_dir) if r.resolve() != root.resolve()]
        if present:
            roots.append(root)
        path = state_dir / BREADCRUMB_NAME
        if roots:
            write_atomic(path, "".join(f"{r}\n" for r in roots).encode())
        else:
            path.unlink(missing_ok=True)
