"""What handlers and subscribers see: requests, replies and bulk frames, already decoded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from forge.ipc.envelope import Payload


@dataclass(frozen=True, slots=True)
class Request:
    """A request as a worker handler receives it."""

    method: str
    args: Any
    payloads: tuple[memoryview, ...] = ()
    request_id: int | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """A handler's answer when it carries raw payload frames; a plain return value needs none.

    On the supervisor side `payloads` are `memoryview`s of the received frames (no copy).
    """

    result: Any = None
    payloads: tuple[Payload, ...] = ()


class StreamFrame(NamedTuple):
    """One bulk frame: `payload` is a view of the received ZeroMQ frame, never decoded or copied.

    `seq` counts every frame the sender offered on the stream, so a gap shows frames its drop
    policy discarded. `meta` is the sender's small msgpack value (or None).
    """

    stream_id: str
    seq: int
    meta: Any
    payload: memoryview
