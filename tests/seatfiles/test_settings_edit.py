"""`settings_edit` over a real socket: saved then pushed to everyone, or refused by reason."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from websockets.asyncio.client import ClientConnection

from .rig import FRAME_S, Start, next_kind, send

EXTRA = """
# the server's own look
[client]
theme = "dusk"   # evenings

[log]
level = "info"
"""


def save(fingerprint: str, *edits: dict[str, Any], id: int = 7) -> dict[str, Any]:
    return {"kind": "settings_edit", "fingerprint": fingerprint, "id": id, "edits": list(edits)}


def set_(key_path: str, value: Any, pattern: str | None = None) -> dict[str, Any]:
    area = key_path.split(".")[0]
    return {
        "op": "set",
        "area": area,
        "key_path": key_path,
        "pattern": pattern or key_path,
        "value": value,
    }


async def answer(client: ClientConnection) -> dict[str, Any]:
    """The save's answer, whichever it is (a `settings` push may come first)."""
    async with asyncio.timeout(FRAME_S):
        while True:
            frame: dict[str, Any] = json.loads(await client.recv())
            if frame["kind"] in ("settings_saved", "settings_refused"):
                return frame


def row(document: dict[str, Any], path: str) -> dict[str, Any]:
    return next(r for area in document["areas"] for r in area["keys"] if r["path"] == path)


async def test_a_save_is_answered_then_every_connection_gets_the_new_document(
    tree_rig: Start,
) -> None:
    rig = await tree_rig(EXTRA)
    before = rig.config.read_text()
    first, document = await rig.client()
    second, _ = await rig.client()
    await send(first, save(document["fingerprint"], set_("client.theme", "dawn")))
    saved = json.loads(await first.recv())
    assert saved == {"kind": "settings_saved", "id": 7, "restart": [], "message": None}
    for client in (first, second):
        pushed = await next_kind(client, "settings")
        assert row(pushed["document"], "client.theme")["value"] == "dawn"
        assert pushed["document"]["fingerprint"] != document["fingerprint"]
    assert rig.config.read_text() == before.replace('"dusk"   # evenings', '"dawn"   # evenings')


async def test_three_concurrent_saves_one_wins_two_are_stale(tree_rig: Start) -> None:
    rig = await tree_rig(EXTRA)
    clients = [await rig.client() for _ in range(3)]
    await asyncio.gather(
        *(
            send(client, save(document["fingerprint"], set_("client.font", f"f{n}"), id=n))
            for n, (client, document) in enumerate(clients)
        )
    )
    answers = [await answer(client) for client, _ in clients]
    saved = [frame for frame in answers if frame["kind"] == "settings_saved"]
    stale = [frame for frame in answers if frame.get("reason") == "stale"]
    assert len(saved) == 1
    assert len(stale) == 2
    assert rig.config.read_text().count(f'font = "f{saved[0]["id"]}"') == 1


async def test_a_candidate_the_loader_refuses_names_its_key_and_no_line(tree_rig: Start) -> None:
    """Issue 36 item 8: the refusal named "forge.toml line 7", a line of the edited text that was
    never written (the file had fewer lines); it names the key and the reason only."""
    rig = await tree_rig(EXTRA)
    before = rig.config.read_text()
    client, document = await rig.client()
    await send(client, save(document["fingerprint"], set_("server.port", "x"), id="p1"))
    refused = await next_kind(client, "settings_refused")
    assert refused["reason"] == "invalid"
    assert refused["id"] == "p1"
    assert refused["key_path"] == "server.port"
    assert refused["message"] == 'server.port: expected an integer from 1 to 65535, got "x"'
    assert rig.config.read_text() == before


async def test_a_broken_project_edit_is_refused_under_the_pages_key_path(tree_rig: Start) -> None:
    rig = await tree_rig()
    client, document = await rig.client()
    key = "projects.acme.proj.browser_profile"
    await send(
        client, save(document["fingerprint"], set_(key, "no/slash", "projects[].browser_profile"))
    )
    refused = await next_kind(client, "settings_refused")
    assert (refused["reason"], refused["key_path"]) == ("invalid", key)
    assert "projects[0].browser_profile" in refused["message"]


async def test_a_live_seats_project_cannot_be_removed_or_renamed(tree_rig: Start) -> None:
    rig = await tree_rig()
    before = rig.config.read_text()
    client, document = await rig.client()
    removal = {"op": "remove", "area": "projects", "key_path": "projects.acme.proj"}
    rename = set_("projects.acme.proj.name", "other", "projects[].name")
    for edit in (removal, rename):
        await send(client, save(document["fingerprint"], edit))
        refused = await next_kind(client, "settings_refused")
        assert refused["reason"] == "refused"
        assert "acme/proj/lead" in refused["message"]
        assert refused["key_path"] == "projects.acme.proj"
    assert rig.config.read_text() == before


async def test_a_restart_key_is_written_and_said_to_apply_at_the_next_start(
    tree_rig: Start,
) -> None:
    rig = await tree_rig()
    client, document = await rig.client()
    await send(client, save(document["fingerprint"], set_("server.ping_interval_s", 5)))
    saved = await next_kind(client, "settings_saved")
    assert saved["restart"] == ["server.ping_interval_s"]
    assert saved["message"] == "server.ping_interval_s applies when forge supervise next starts"
    assert "ping_interval_s = 5" in rig.config.read_text()


async def test_stale_and_malformed_saves_write_nothing(tree_rig: Start) -> None:
    rig = await tree_rig()
    before = rig.config.read_text()
    client, document = await rig.client()
    await send(client, save("0000000000000000", set_("client.theme", "x")))
    assert (await next_kind(client, "settings_refused"))["reason"] == "stale"
    await send(client, save(document["fingerprint"], {"op": "rename", "area": "client"}, id=3))
    refused = await next_kind(client, "settings_refused")
    assert (refused["reason"], refused["id"]) == ("invalid", 3)
    assert refused["message"].startswith("edit 1: ")
    await send(client, {"kind": "settings_edit", "id": 4, "edits": []})
    assert (await next_kind(client, "settings_refused"))["reason"] == "stale"
    assert rig.config.read_text() == before
