"""The tree worker's protocol: the git reads the supervisor asks of a seat's tree, and its
tree watches.

A read is answered with its result, or refused with code `git` and the sentence git failed with
(a client is told it). A watch is named by the supervisor (`Watch.watch`, unique for the run);
its events name it back: `ready` once the watch is up, `changed` per burst that can move a work
row, `failed` when it cannot be kept; `unwatch` ends it.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from forge.ipc.protocol import WorkerEvent, WorkerProtocol, WorkerRequest
from forge.wire.git import NO_GIT, Diff, GitLayer, Work

GIT_FAILED = "git"
"""The refusal code of a read git could not answer; its message is git's failure in words."""


class Seen(msgspec.Struct, frozen=True):
    """What the supervisor keeps of a scan: the rows a client draws. Not the status entries a
    diff is read from: thousands of them in a busy tree, decoded for nothing on its loop."""

    work: Work
    git: GitLayer | None

    @property
    def told(self) -> bytes:
        """What a holder of the seat learns from this scan: the work row and the git layer."""
        return msgspec.json.encode((self.work, self.git))


NOTHING_SEEN = Seen(NO_GIT, None)
"""What a scan reads where git does not run."""


class Recorded(msgspec.Struct, frozen=True):
    """A scan and the diff read against it (None when git does not run there)."""

    seen: Seen
    diff: Diff | None


class Blob(msgspec.Struct, frozen=True):
    """A file at a commit: its size, and its first `limit` bytes."""

    size: int
    data: bytes


class ReadWork(WorkerRequest[Work], tag="work", frozen=True):
    directory: str


class ReadScan(WorkerRequest[Seen], tag="scan", frozen=True):
    directory: str


class ReadRecord(WorkerRequest[Recorded], tag="record", frozen=True):
    directory: str


class ResolveCommit(WorkerRequest[str | None], tag="commit", frozen=True):
    """-> the commit id, or None when the revision names none."""

    directory: str
    revision: str


class ReadBlob(WorkerRequest[Blob], tag="blob", frozen=True):
    directory: str
    commit: str
    path: str
    limit: int


class Watch(WorkerRequest[None], tag="watch", frozen=True):
    """Watch `tree` (and its git folders) as `watch`: its events follow."""

    watch: int
    tree: str


class Unwatch(WorkerRequest[None], tag="unwatch", frozen=True):
    watch: int


class WatchHeard(WorkerEvent, tag="watch", frozen=True):
    watch: int
    word: Literal["ready", "changed", "failed"]
    why: str | None = None


TREES = WorkerProtocol(
    kind="trees",
    module="forge.workers.trees",
    requests=(ReadWork, ReadScan, ReadRecord, ResolveCommit, ReadBlob, Watch, Unwatch),
    events=(WatchHeard,),
)
