"""A worker kind's protocol, declared once: its kind, module, streams, requests, replies and events.

Each kind has one module, `forge/workers/<kind>/protocol.py`, that declares a `WorkerProtocol`
and the msgspec structs that cross ZeroMQ. The supervisor (or the lab) imports that module and
nothing else of the kind's package; the worker decodes every request into its struct, so a
malformed request is refused naming the field (`bad_request: resize: Expected `int`, got `str`
- at `$.cols``), never checked by hand.

A request is a `WorkerRequest` subclass whose msgspec `tag` is the method name and whose type
parameter is the struct (or builtin type) its answer decodes into (`frozen=True` is repeated on
every subclass, because mypy's dataclass rule wants it there):

    class Resize(WorkerRequest[Resized], tag="resize", frozen=True):
        cols: int
        rows: int

The supervisor calls `await call(handle, Resize(cols=80, rows=24))` and gets a `Resized`; the
worker's handler is `@handles(Resize) async def resize(self, request: Resize) -> Resized`.
Events are `WorkerEvent` subclasses tagged by their event name, emitted with `emit_event` and
read back with `WorkerProtocol.decode_event`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, get_args

import msgspec

from forge.ipc.errors import RequestFailed
from forge.ipc.policy import LifecycleTimings

if TYPE_CHECKING:
    from forge.ipc.manager import WorkerHandle, WorkerSpec
    from forge.ipc.messages import Reply as RawReply

ReplyT = TypeVar("ReplyT")

RAW = (bytes, bytearray, memoryview)
"""Kept as they are by `to_builtins`: msgpack carries bytes natively (the default would be a
base64 string, a third bigger and encoded twice)."""

BAD_REQUEST = "bad_request"
"""The code of a request whose arguments do not decode into the method's struct."""


class WorkerRequest(
    msgspec.Struct,
    Generic[ReplyT],
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    tag_field="method",
):
    """Base of every supervisor -> worker request; the subclass's msgspec tag is its method.

    The type parameter is the answer's type: `class Resize(WorkerRequest[Resized], tag="resize")`.
    """

    Reply: ClassVar[Any] = None
    """The type the worker's answer decodes into, taken from the type parameter (None: ignored)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            parameters = get_args(base)
            if parameters and not isinstance(parameters[0], TypeVar):
                cls.Reply = None if parameters[0] is type(None) else parameters[0]

    @classmethod
    def method(cls) -> str:
        tag = cls.__struct_config__.tag
        if not isinstance(tag, str):
            raise TypeError(f"{cls.__name__} has no string tag: declare it with tag='<method>'")
        return tag

    def args(self) -> dict[str, Any]:
        """The request's fields as msgpack-able builtins (the tag is the method, not an arg)."""
        args: dict[str, Any] = msgspec.to_builtins(self, builtin_types=RAW)
        args.pop("method", None)
        return args


class WorkerEvent(msgspec.Struct, frozen=True, kw_only=True, tag_field="event"):
    """Base of every worker -> supervisor event; the subclass's msgspec tag is the event name."""

    @classmethod
    def event_name(cls) -> str:
        tag = cls.__struct_config__.tag
        if not isinstance(tag, str):
            raise TypeError(f"{cls.__name__} has no string tag: declare it with tag='<event>'")
        return tag

    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = msgspec.to_builtins(self, builtin_types=RAW)
        data.pop("event", None)
        return data


RequestT = TypeVar("RequestT", bound="WorkerRequest[Any]")


def decode_request(request_type: type[RequestT], args: Any) -> RequestT:
    """The worker's side: `args` as `request_type`, or a `bad_request` refusal naming the field."""
    try:
        request: RequestT = msgspec.convert(
            args if args is not None else {}, request_type, strict=True
        )
    except msgspec.ValidationError as error:
        raise RequestFailed(BAD_REQUEST, f"{request_type.method()}: {error}") from error
    return request


def encode_reply(result: Any) -> Any:
    """A handler's typed answer as msgpack-able builtins."""
    return msgspec.to_builtins(result, builtin_types=RAW)


def decode_reply(request: WorkerRequest[ReplyT], result: Any) -> ReplyT:
    """The supervisor's side: a worker's answer as the request's declared `Reply` type."""
    expected = type(request).Reply
    if expected is None:
        return None  # type: ignore[return-value]  # a WorkerRequest[None]
    answer: ReplyT = msgspec.convert(result, expected, strict=False)
    return answer


async def call(
    handle: WorkerHandle, request: WorkerRequest[ReplyT], *, within: float | None = None
) -> ReplyT:
    """Send a typed request and decode its answer (see `WorkerHandle.request` for the errors)."""
    reply = await handle.request(request.method(), request.args(), within=within)
    return decode_reply(request, reply.result)


async def call_raw(
    handle: WorkerHandle,
    request: WorkerRequest[ReplyT],
    *,
    payloads: tuple[Any, ...] = (),
    within: float | None = None,
) -> tuple[ReplyT, RawReply]:
    """`call` for a request or answer that carries raw payload frames: (typed answer, raw reply)."""
    reply = await handle.request(request.method(), request.args(), payloads=payloads, within=within)
    return decode_reply(request, reply.result), reply


@dataclass(frozen=True, slots=True)
class WorkerProtocol:
    """One worker kind as the rest of forge sees it: how to start it and what crosses to it."""

    kind: str
    module: str
    """Run as `python -m <module>`; its `__main__` calls `run_worker` with the kind's Worker."""
    requests: tuple[type[WorkerRequest[Any]], ...] = ()
    events: tuple[type[WorkerEvent], ...] = ()
    streams: tuple[str, ...] = ()
    """Bulk stream names the worker sends on (documentation and checks; ids may add a suffix)."""
    timings: LifecycleTimings | None = None
    restart: bool = True
    """Whether an exit nobody asked for restarts the worker (a terminal host's shell is gone for
    good with it, so that kind says no)."""
    lends: bool = False
    """Whether the worker lends its supervisor file descriptors (`forge.ipc.lending`)."""
    _events_by_name: Mapping[str, type[WorkerEvent]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        names = {event.event_name(): event for event in self.events}
        object.__setattr__(self, "_events_by_name", names)
        methods = [request.method() for request in self.requests]
        if len(set(methods)) != len(methods):
            raise TypeError(f"{self.kind}: two requests share a method name: {methods}")

    def spec(
        self,
        name: str,
        *,
        config: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        timings: LifecycleTimings | None = None,
    ) -> WorkerSpec:
        """The one way a `WorkerSpec` is built for this kind."""
        from forge.ipc.manager import WorkerSpec

        return WorkerSpec(
            name=name,
            kind=self.kind,
            module=self.module,
            config=dict(config or {}),
            env=dict(env or {}),
            cwd=cwd,
            timings=timings or self.timings,
            restart=self.restart,
            lends=self.lends,
        )

    def decode_event(self, name: str, data: Any) -> WorkerEvent | None:
        """An event as its declared struct; None for a name this kind does not declare."""
        event_type = self._events_by_name.get(name)
        if event_type is None:
            return None
        return msgspec.convert(data if data is not None else {}, event_type, strict=False)

    def methods(self) -> Iterable[str]:
        return (request.method() for request in self.requests)
