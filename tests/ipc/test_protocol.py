"""Typed worker protocols: requests as structs both sides, refusals that name the field."""

from __future__ import annotations

import pytest

from forge.ipc.errors import RequestFailed
from forge.ipc.manager import WorkerManager
from forge.ipc.protocol import WorkerProtocol, call, decode_reply, decode_request
from forge.testing.misbehaving_protocol import (
    MISBEHAVING,
    Children,
    Echo,
    FloodDone,
    Pid,
    Sleep,
    Stream,
)

from .helpers import misbehaving


def test_a_request_is_its_method_and_its_fields() -> None:
    request = Stream(stream="out", chunks=[b"a"])
    assert (request.method(), request.args()) == ("stream", {"stream": "out", "chunks": [b"a"]})
    assert decode_request(Stream, request.args()) == request


def test_a_request_that_does_not_decode_is_refused_naming_the_field() -> None:
    with pytest.raises(RequestFailed) as refused:
        decode_request(Sleep, {"seconds": "long"})
    assert refused.value.code == "bad_request"
    assert refused.value.message == "sleep: Expected `float`, got `str` - at `$.seconds`"
    with pytest.raises(RequestFailed, match="unknown field `extra`"):
        decode_request(Pid, {"extra": 1})


def test_an_answer_decodes_into_the_requests_declared_reply() -> None:
    assert decode_reply(Children(), [3, 4]) == [3, 4]
    assert decode_reply(Echo(value=None), {"any": "thing"}) == {"any": "thing"}


def test_events_decode_by_name_and_unknown_names_are_none() -> None:
    data = FloodDone(offered=3, dropped=1).data()
    assert data == {"offered": 3, "dropped": 1}
    assert MISBEHAVING.decode_event("flood_done", data) == FloodDone(offered=3, dropped=1)
    assert MISBEHAVING.decode_event("no_such_event", {}) is None


def test_a_protocol_refuses_two_requests_with_one_method() -> None:
    with pytest.raises(TypeError, match="two requests share a method name"):
        WorkerProtocol(kind="twice", module="nowhere", requests=(Pid, Pid))


def test_a_spec_is_built_from_the_protocol() -> None:
    spec = MISBEHAVING.spec("one", config={"crash_after": 2})
    assert (spec.kind, spec.module, spec.config) == (
        "misbehaving",
        "forge.testing.misbehaving",
        {"crash_after": 2},
    )


async def test_a_real_worker_refuses_a_malformed_request_and_answers_the_next(
    manager: WorkerManager,
) -> None:
    worker = manager.start(misbehaving("strict"))
    with pytest.raises(RequestFailed) as refused:
        await worker.request("sleep", {"seconds": "long"})
    assert refused.value.code == "bad_request"
    assert "`$.seconds`" in refused.value.message
    assert await call(worker, Echo(value=[1, "two"])) == [1, "two"]
