"""The registry of socket messages: one struct per kind and direction, the page's types generated
from it, docs/protocol.md held to it, and nothing but a registered message on the send path."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from forge.client.frames import OtherFrame, decode_frame
from forge.errors import InternalError
from forge.supervisor.socket import drills
from forge.wire import schema, server
from forge.wire.client import ClientMessage, Ping
from forge.wire.registry import CLIENT, REGISTRY, SERVER, Direction, Registry, kind_of

PROTOCOL = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
_CELL_KIND = re.compile(r"`([a-z][a-z0-9_]*)")


def table_kinds(heading: str) -> set[str]:
    """The kinds named in the first column of the table under `## heading` in protocol.md."""
    text = PROTOCOL.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {kind for row in rows for kind in _CELL_KIND.findall(row.split(" | ")[0])}


def not_served_kinds() -> set[str]:
    """The kinds protocol.md lists as registered nowhere (its "Not served" paragraph)."""
    text = PROTOCOL.read_text(encoding="utf-8")
    paragraph = text.split("\n**Not served**", 1)[1].split("\n\n", 1)[0]
    return set(_CELL_KIND.findall(paragraph))


def test_every_message_struct_is_tagged_on_kind_under_its_directions_base() -> None:
    for shape in CLIENT:
        assert issubclass(shape, ClientMessage)
        assert shape.__struct_config__.tag_field == "kind"
    for answer in SERVER:
        assert issubclass(answer, server.ServerMessage)
        assert answer.__struct_config__.tag_field == "kind"
    assert REGISTRY.shape(Direction.SERVER, "terminal_view") is not REGISTRY.shape(
        Direction.CLIENT, "terminal_view"
    )


def test_a_kind_registered_twice_in_one_direction_is_refused_naming_both() -> None:
    class Twin(ClientMessage, frozen=True, tag="ping"):
        pass

    with pytest.raises(InternalError, match=r"client kind `ping` is registered twice: Ping and "):
        Registry((Ping, Twin), ())
    Registry((Ping,), ())  # one of each is fine


def test_the_send_path_takes_only_a_server_message() -> None:
    """A message built as a dict in place (what the envelopes were) is refused, not sent."""
    with pytest.raises(InternalError, match="only a ServerMessage is sent, not dict"):
        server.JsonFrame.encode({"kind": "pong"})  # type: ignore[arg-type]
    with pytest.raises(InternalError, match="not Ping"):
        server.JsonFrame.encode(Ping())  # type: ignore[arg-type]
    assert server.JsonFrame.encode(server.Pong()).text == b'{"kind":"pong"}'


def test_the_client_reads_a_frame_with_the_struct_the_server_encoded() -> None:
    sent = server.Error(what="subscribe", why="no seat")
    assert decode_frame(server.JsonFrame.encode(sent).text.decode()) is not sent
    assert decode_frame(server.JsonFrame.encode(sent).text.decode()) == sent
    assert isinstance(decode_frame('{"kind":"from_a_newer_server"}'), OtherFrame)


def test_the_pages_types_are_what_the_registry_generates() -> None:
    """`.ci/run` runs `python -m forge.wire.schema --check`; this is the same comparison."""
    assert schema.OUTPUT.read_text(encoding="utf-8") == schema.generate()


def test_the_drift_check_fails_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = tmp_path / "protocol.ts"
    stale.write_text(schema.generate().replace('"ping"', '"pinged"'), encoding="utf-8")
    monkeypatch.setattr(schema, "OUTPUT", stale)
    said: list[str] = []
    assert schema.main(["--check"], write=said.append) == 1
    assert str(stale) in said[0]
    assert schema.main([]) == 0
    assert schema.main(["--check"], write=said.append) == 0


def test_the_generated_unions_hold_every_registered_kind_with_exact_optionality() -> None:
    text = schema.generate()
    for direction in Direction:
        for shape in REGISTRY.shapes(direction):
            name = schema.message_name(direction, shape)
            assert f'export interface {name} {{\n  kind: "{kind_of(shape)}";' in text
            assert f"  | {name}\n" in text or f"  | {name};" in text
    # A client may leave out what has a default; the server leaves out only what it omits.
    assert "  reply_to?: number | string | null;" in text
    update = (
        'export interface ServerUpdate {\n  kind: "update";\n  update: unknown;\n'
        "  seq?: number | null;"
    )
    assert update in text
    assert "  seat: Seat | null;\n  dispatch_id: null;" in text


def test_protocol_md_documents_every_registered_kind_and_only_those() -> None:
    assert table_kinds("What a client sends") == REGISTRY.kinds(Direction.CLIENT)
    assert table_kinds("Every message the server sends") == REGISTRY.kinds(Direction.SERVER)


def test_what_protocol_md_lists_as_not_served_is_registered_nowhere() -> None:
    drill_kinds = {
        kind_of(value)
        for value in vars(drills).values()
        if isinstance(value, type)
        and issubclass(value, msgspec.Struct)
        and value.__module__ == drills.__name__
    }
    assert not_served_kinds() == drill_kinds
    registered = REGISTRY.kinds(Direction.CLIENT) | REGISTRY.kinds(Direction.SERVER)
    assert not_served_kinds().isdisjoint(registered)
