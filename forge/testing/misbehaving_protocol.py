"""The misbehaving worker's protocol: the requests a test sends it and the events it emits.

A test starts one with `MISBEHAVING.spec(name, config={...})` (the config keys that script what
goes wrong from the start are listed in `forge.testing.misbehaving`) and asks it with
`await call(handle, Echo(value=...))`. The worker is `forge.testing.misbehaving`; like every
kind's protocol module, this one imports nothing of it.
"""

from __future__ import annotations

from typing import Any

from forge.ipc.protocol import WorkerEvent, WorkerProtocol, WorkerRequest


class Echo(WorkerRequest[Any], tag="echo", frozen=True):
    """`value` back, and every payload frame back (send it with `call_raw` to see them)."""

    value: Any


class Pid(WorkerRequest[int], tag="pid", frozen=True):
    """The worker's `os.getpid()`."""


class Children(WorkerRequest[list[int]], tag="children", frozen=True):
    """The pids of the children the `spawn_child` config started."""


class Sleep(WorkerRequest[str], tag="sleep", frozen=True):
    """Answer "slept" after an asyncio sleep: a request in flight for as long as a test likes."""

    seconds: float


class Block(WorkerRequest[str], tag="block", frozen=True):
    """Block the event loop with time.sleep (no heartbeats either), then answer "blocked"."""

    seconds: float


class Flood(WorkerRequest[str], tag="flood", frozen=True):
    """Answer "flooding" at once, then offer `count` frames of `size` bytes on `stream`, dropping
    what does not fit; end the stream with "flood_done" and emit `FloodDone`."""

    stream: str
    size: int
    count: int


class Pump(WorkerRequest[int], tag="pump", frozen=True):
    """Send `count` frames of `size` bytes with backpressure (none dropped), end the stream with
    "pumped"; answers the stream's last seq."""

    stream: str
    size: int
    count: int


class Stream(WorkerRequest[int], tag="stream", frozen=True):
    """Send each chunk with backpressure (meta `{"size": len}`), end the stream with "finished";
    answers the stream's last seq."""

    stream: str
    chunks: list[bytes]


class Emit(WorkerRequest[None], tag="emit", frozen=True):
    """Emit `Title(text=title)`, carrying the request's payload frames."""

    title: str


class Received(WorkerRequest[list[int]], tag="received", frozen=True):
    """The seqs of the bulk frames the worker has received so far, 0 where a stream ended."""


class FloodDone(WorkerEvent, tag="flood_done", frozen=True):
    offered: int
    dropped: int


class Title(WorkerEvent, tag="title", frozen=True):
    text: str


MISBEHAVING = WorkerProtocol(
    kind="misbehaving",
    module="forge.testing.misbehaving",
    requests=(Echo, Pid, Children, Sleep, Block, Flood, Pump, Stream, Emit, Received),
    events=(FloodDone, Title),
    lends=True,
)
