"""The walker worker's protocol: what the supervisor's process views ask, and the rows it gets."""

from __future__ import annotations

from typing import Annotated, TypedDict

import msgspec

from forge.ipc.protocol import WorkerProtocol, WorkerRequest

SessionId = Annotated[int, msgspec.Meta(gt=0)]


class ProcessRow(TypedDict):
    """One process of a seat's view; `ppid` lets a client draw the tree from the flat list."""

    pid: int
    ppid: int
    name: str
    cmdline: list[str]
    """The argument vector as the kernel holds it (a string would lose argument boundaries)."""
    cpu_percent: float
    """Share of one core since the previous walk, to one decimal; 0.0 on a process's first."""
    rss_bytes: int
    started_ms: int


class Walked(msgspec.Struct, frozen=True):
    trees: list[list[ProcessRow]]
    """One list of rows per group asked for, in the order asked."""


class Walk(WorkerRequest[Walked], tag="walk", frozen=True):
    """Per group, every process of those sessions plus descendants that moved to a session of
    their own."""

    sessions: list[list[SessionId]]


WALKER = WorkerProtocol(kind="walker", module="forge.workers.walker", requests=(Walk,))
