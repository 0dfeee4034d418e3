"""Server messages: the exact shapes, and kind 3 for large JSON on deflate connections (T19)."""

from __future__ import annotations

import gzip
import json

from forge.wire import server
from forge.wire.client import ClientPerf, More
from forge.wire.seats import Seat, session
from forge.wire.server import DEFLATE_THRESHOLD, JsonFrame
from forge.wire.unserved import answer_unserved

SEAT = Seat("acme", "proj", "lead")
SEAT_JSON = {"org": "acme", "project": "proj", "label": "lead"}


def wire(message: server.ServerMessage) -> object:
    return json.loads(JsonFrame.encode(message).text)


def test_greeting_shape() -> None:
    message = wire(
        server.Greeting(
            forge_version="0.1.0 · abc1234",
            forge_version_short="0.1.0+abc1234",
            settings={"mark": None},
        )
    )
    assert message == {
        "kind": "greeting",
        "version": 29,
        "forge_version": "0.1.0 · abc1234",
        "forge_version_short": "0.1.0+abc1234",
        "settings": {"mark": None},
    }


def test_update_numbering_keys() -> None:
    seat_update = wire(server.Update.of("seat_changed", {"key": SEAT}, seq=4))
    assert seat_update == {
        "kind": "update",
        "update": {"seat_changed": {"key": {"org": "acme", "project": "proj", "label": "lead"}}},
        "seq": 4,
        "span": 1,
    }
    keyless = wire(server.Update.of("fatal_error", {"error": None}, seq=None))
    assert keyless == {"kind": "update", "update": {"fatal_error": {"error": None}}, "span": 1}
    assert wire(server.Update.of("catalog_loaded", None, seq=None))["update"] == "catalog_loaded"  # type: ignore[index]


def test_snapshot_echoes_the_subject_in_its_wire_shape() -> None:
    assert wire(server.Snapshot(subject=session(SEAT), data={}))["subject"] == {  # type: ignore[index]
        "session": {"org": "acme", "project": "proj", "label": "lead"}
    }


def test_error_has_null_seat_and_dispatch_id_by_default() -> None:
    assert wire(server.Error(what="client_message", why="unknown kind `x`")) == {
        "kind": "error",
        "what": "client_message",
        "why": "unknown kind `x`",
        "seat": None,
        "dispatch_id": None,
    }


def big(total: int) -> server.ServerMessage:
    """A message whose JSON is exactly `total` bytes."""
    empty = len(JsonFrame.encode(server.Snapshot(subject="home", data={"pad": ""})).text)
    return server.Snapshot(subject="home", data={"pad": "x" * (total - empty)})


def test_deflate_threshold_is_inclusive_and_only_on_deflate_connections() -> None:
    below = JsonFrame.encode(big(DEFLATE_THRESHOLD - 1))
    at = JsonFrame.encode(big(DEFLATE_THRESHOLD))
    assert len(below.text) == DEFLATE_THRESHOLD - 1
    assert below.for_connection(deflate=True) == (below.text, True)
    data, is_text = at.for_connection(deflate=True)
    assert not is_text
    assert data[0] == 3
    assert gzip.decompress(data[1:]) == at.text
    assert at.for_connection(deflate=False) == (at.text, True)


def test_gzip_is_deterministic() -> None:
    one = JsonFrame.encode(big(70000)).deflated()
    two = JsonFrame.encode(big(70000)).deflated()
    assert one == two


def test_unserved_answers_cannot_loop_a_client() -> None:
    page = answer_unserved(More(conversation=SEAT))
    assert page == server.Page(conversation=SEAT, turns=[], cursor=None)
    assert wire(page) == {"kind": "page", "conversation": SEAT_JSON, "turns": [], "cursor": None}
    assert answer_unserved(ClientPerf()) is None
