"""Subjects, numbering, marks and verbs over a real socket (S, H rows; D1, D2)."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from forge.testing.supervised import Start, Supervised, ask, quiet

SEAT = {"org": "acme", "project": "proj", "label": "lead"}
SESSION = {"session": SEAT}


def git_project(root: Path) -> Path:
    """A repository on branch `main` with one commit, one modified file and one untracked file."""
    root.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    (root / "tracked.txt").write_text("one\n")
    git("add", "tracked.txt")
    git("commit", "-q", "-m", "first")
    (root / "tracked.txt").write_text("two\n")
    (root / "new.txt").write_text("new\n")
    return root


def config_for(path: Path) -> str:
    return f'[[projects]]\norg = "acme"\nname = "proj"\npath = "{path}"\n'


@pytest.fixture
async def seated(supervise: Start, tmp_path: Path) -> Supervised:
    return await supervise(config_for(git_project(tmp_path / "proj")))


async def start_seat(client: ClientConnection, seat: dict[str, str] = SEAT) -> None:
    assert await ask(client, {"kind": "drill_start_seat", "seat": seat}) == {"kind": "drill_done"}


async def publish(
    client: ClientConnection, variant: str, body: dict[str, Any], **extra: Any
) -> None:
    message = {"kind": "drill_seat_update", "seat": SEAT, "variant": variant, "body": body}
    await client.send(json.dumps(message | extra))


async def next_json(client: ClientConnection) -> dict[str, Any]:
    message = await client.recv()
    assert isinstance(message, str)
    decoded: dict[str, Any] = json.loads(message)
    return decoded


async def test_home_carries_projects_with_git_work_and_the_runs_facts(seated: Supervised) -> None:
    one = await seated.greeted()
    home = await ask(one, {"kind": "subscribe", "what": "home"})
    assert home["kind"] == "snapshot"
    assert home["subject"] == "home"
    data = home["data"]
    assert {
        "projects", "agents", "unseen", "forge_version", "forge_version_short", "boot_id",
        "service_status", "fatal_error", "workers",
    } <= set(data)  # fmt: skip
    (row,) = data["projects"]
    assert row["project"]["org"] == "acme"
    assert row["project"]["sessions"] == 0
    assert row["work"] == {"branch": "main", "changed": 2, "gate": True}
    assert [row["name"] for row in data["workers"]] == ["trees"]  # the tree worker alone
    assert (data["service_status"], data["fatal_error"], data["agents"]) == (None, None, [])
    two = await seated.greeted()
    again = await ask(two, {"kind": "subscribe", "what": "home"})
    assert again["data"]["boot_id"] == data["boot_id"]


async def test_boot_id_changes_with_the_process(supervise: Start, tmp_path: Path) -> None:
    first = await supervise()
    client = await first.greeted()
    one = (await ask(client, {"kind": "subscribe", "what": "home"}))["data"]["boot_id"]
    await first.stop()
    second = await supervise()
    client = await second.greeted()
    two = (await ask(client, {"kind": "subscribe", "what": "home"}))["data"]["boot_id"]
    assert one != two


@pytest.mark.parametrize("subject", ["board", "usage", "dictate_models", "extensions"])
async def test_the_other_subjects_answer_a_snapshot(seated: Supervised, subject: str) -> None:
    client = await seated.greeted()
    snapshot = await ask(client, {"kind": "subscribe", "what": subject})
    assert snapshot["kind"] == "snapshot"
    assert snapshot["subject"] == subject


async def test_a_seat_of_an_unknown_project_or_never_started_is_an_error(
    seated: Supervised,
) -> None:
    client = await seated.greeted()
    stranger = {"org": "acme", "project": "nope", "label": "lead"}
    refused = await ask(client, {"kind": "subscribe", "what": {"session": stranger}})
    assert refused["what"] == "subscribe"
    assert refused["seat"] == stranger
    assert "acme/nope" in refused["why"]
    unstarted = await ask(client, {"kind": "subscribe", "what": SESSION})
    assert unstarted["what"] == "subscribe"
    assert unstarted["seat"] == SEAT
    assert "has not been started" in unstarted["why"]


async def test_a_started_seat_is_numbered_listed_and_snapshotted(seated: Supervised) -> None:
    watcher = await seated.greeted()
    await ask(watcher, {"kind": "subscribe", "what": "home"})
    actor = await seated.greeted()
    await start_seat(actor)
    changed = await next_json(watcher)
    assert changed["kind"] == "update"
    assert (changed["seq"], changed["span"]) == (1, 1)
    row = changed["update"]["seat_changed"]["row"]
    assert row["slot"] == SEAT
    assert row["lifecycle"] == "idle"
    assert row["work"]["changed"] == 2
    home = await ask(actor, {"kind": "subscribe", "what": "home"})
    assert [agent["slot"] for agent in home["data"]["agents"]] == [SEAT]
    assert home["data"]["projects"][0]["project"]["sessions"] == 1
    snapshot = await ask(actor, {"kind": "subscribe", "what": SESSION})
    data = snapshot["data"]
    assert {"slot", "header", "state", "terminal", "processes", "background_tasks"} <= set(data)
    assert data["header"]["seq"] == 2
    assert data["terminal"] is None
    assert data["processes"] is None
    assert data["background_tasks"] == []
    await publish(actor, "note", {"key": SEAT})
    assert (await next_json(actor))["seq"] == data["header"]["seq"]


async def test_counted_subscriptions_and_one_frame_per_connection(seated: Supervised) -> None:
    client = await seated.greeted()
    await start_seat(client)
    for _ in range(2):
        assert (await ask(client, {"kind": "subscribe", "what": SESSION}))["kind"] == "snapshot"
    await ask(client, {"kind": "subscribe", "what": "home"})
    await publish(client, "seat_changed", {"key": SEAT}, home=True)
    assert (await next_json(client))["kind"] == "update"
    await quiet(client)
    await client.send(json.dumps({"kind": "unsubscribe", "what": "home"}))
    await client.send(json.dumps({"kind": "unsubscribe", "what": SESSION}))
    await publish(client, "note", {"key": SEAT})
    assert (await next_json(client))["update"] == {"note": {"key": SEAT}}
    await client.send(json.dumps({"kind": "unsubscribe", "what": SESSION}))
    await client.send(json.dumps({"kind": "unsubscribe", "what": SESSION}))
    await publish(client, "note", {"key": SEAT})
    await quiet(client)


async def test_seat_range_repairs_from_the_window(seated: Supervised) -> None:
    client = await seated.greeted()
    await start_seat(client)
    snapshot = await ask(client, {"kind": "subscribe", "what": SESSION})
    epoch = snapshot["data"]["header"]["session_id"]
    live = []
    for n in range(5):
        await publish(client, "note", {"key": SEAT, "n": n})
        live.append(await next_json(client))
    ask_range = {"kind": "seat_range", "slot": SEAT, "epoch": epoch, "from": 3, "to": 5}
    frames = await ask(client, ask_range)
    assert frames["kind"] == "seat_frames"
    assert frames["epoch"] == epoch
    assert frames["frames"] == [{"seq": f["seq"], "update": f["update"]} for f in live[1:4]]
    stale = await ask(client, ask_range | {"epoch": "0" * 32})
    assert (stale["what"], stale["seat"]) == ("seat_range", SEAT)
    ahead = await ask(client, ask_range | {"to": 99})
    assert ahead["what"] == "seat_range"


async def test_a_mark_is_spent_only_by_showing_and_holding(seated: Supervised) -> None:
    client = await seated.greeted()
    await start_seat(client)
    await ask(client, {"kind": "subscribe", "what": "home"})
    await client.send(json.dumps({"kind": "drill_unseen", "seat": SEAT}))
    marked = await next_json(client)
    assert marked["kind"] == "snapshot"
    assert marked["data"]["unseen"] == [SEAT]
    await client.send(json.dumps({"kind": "showing", "seat": SEAT}))
    await quiet(client)
    other = await seated.greeted()
    assert (await ask(other, {"kind": "subscribe", "what": "home"}))["data"]["unseen"] == [SEAT]
    assert (await ask(client, {"kind": "subscribe", "what": SESSION}))["kind"] == "snapshot"
    spent = await next_json(client)
    assert (spent["kind"], spent["data"]["unseen"]) == ("snapshot", [])
    assert (await next_json(other))["data"]["unseen"] == []


async def test_nothing_carries_over_to_a_reconnect(seated: Supervised) -> None:
    client = await seated.greeted()
    await start_seat(client)
    await ask(client, {"kind": "subscribe", "what": SESSION})
    await ask(client, {"kind": "subscribe", "what": "home"})
    await client.close()
    again = await seated.greeted()
    await publish(again, "seat_changed", {"key": SEAT}, home=True)
    await quiet(again)


async def test_showing_dies_with_the_connection(seated: Supervised) -> None:
    client = await seated.greeted()
    await start_seat(client)
    await client.send(json.dumps({"kind": "showing", "seat": SEAT}))
    await quiet(client)
    await client.close()
    again = await seated.greeted()
    await ask(again, {"kind": "subscribe", "what": SESSION})
    await ask(again, {"kind": "subscribe", "what": "home"})
    await again.send(json.dumps({"kind": "drill_unseen", "seat": SEAT}))
    assert (await next_json(again))["data"]["unseen"] == [SEAT]


async def test_a_fatal_error_is_a_keyless_update_to_home(seated: Supervised) -> None:
    client = await seated.greeted()
    await ask(client, {"kind": "subscribe", "what": "home"})
    await client.send(json.dumps({"kind": "drill_fatal", "message": "terminal host failed"}))
    update = await next_json(client)
    assert "seq" not in update
    assert update["span"] == 1
    assert update["update"]["fatal_error"]["error"]["message"] == "terminal host failed"
    home = await ask(client, {"kind": "subscribe", "what": "home"})
    assert home["data"]["fatal_error"]["message"] == "terminal host failed"


async def test_commands_follow_the_reply_to_rule(seated: Supervised) -> None:
    client = await seated.greeted()
    cancel = {"kind": "command", "command": {"cancel": {"key": SEAT}}}
    no_agent = "seat acme/proj/lead has no agent (spawn one first)"
    assert (await ask(client, cancel))["why"] == no_agent
    assert (await ask(client, cancel | {"reply_to": None}))["why"] == no_agent
    assert "reply_to" in (await ask(client, cancel | {"reply_to": 1}))["why"]
    release = {"kind": "command", "command": {"biometric_release": {}}}
    assert "reply_to" in (await ask(client, release))["why"]
    assert (await ask(client, {"kind": "command", "command": "warp"}))[
        "why"
    ] == "unknown command warp"


async def test_verbs_outside_wave_one_answer_without_looping(seated: Supervised) -> None:
    client = await seated.greeted()
    await start_seat(client)
    page = await ask(client, {"kind": "more", "conversation": SEAT, "turns": 5})
    assert page == {"kind": "page", "conversation": SEAT, "turns": [], "cursor": None}
    content = await ask(client, {"kind": "file_content", "session": SEAT, "path": "a"})
    assert content["content"]["state"] == "failed"
    voice = await ask(client, {"kind": "voice_mode", "key": SEAT, "on": False})
    assert voice == {"kind": "voice_mode_state", "key": SEAT, "listeners": 0}
    edit = await ask(client, {"kind": "settings_edit", "id": 7, "fingerprint": "x", "edits": []})
    assert (edit["kind"], edit["id"], edit["reason"]) == ("settings_refused", 7, "stale")
    document = await ask(client, {"kind": "document_read", "session": SEAT, "path": "a.md"})
    assert (document["what"], document["seat"]) == ("document_read", SEAT)
    await client.send(json.dumps({"kind": "client_perf", "fps": 60}))
    await quiet(client)


async def test_settings_are_pushed_to_every_connection_after_a_reload(
    seated: Supervised,
) -> None:
    one = await seated.connect()
    assert json.loads(await one.recv())["kind"] == "greeting"
    fingerprint = json.loads(await one.recv())["document"]["fingerprint"]
    two = await seated.greeted()
    seated.config.write_text(seated.config.read_text() + "# a comment\n")
    seated.process.send_signal(signal.SIGHUP)
    pushed = [await next_json(one), await next_json(two)]
    assert [p["kind"] for p in pushed] == ["settings", "settings"]
    assert pushed[0] == pushed[1]
    assert pushed[0]["document"]["fingerprint"] != fingerprint
    seated.config.write_text("[server\n")
    seated.process.send_signal(signal.SIGHUP)
    await seated.record("config_reload_failed")
    await quiet(one)
    await quiet(two)


async def test_home_hears_the_rows_it_draws_and_not_a_seats_own_updates(seated: Supervised) -> None:
    client = await seated.greeted()
    await start_seat(client)
    await ask(client, {"kind": "subscribe", "what": "home"})
    await publish(client, "processes_changed", {"key": SEAT, "processes": []})
    await quiet(client)
    await publish(client, "work_changed", {"key": SEAT, "work": {}}, home=True)
    assert "work_changed" in (await next_json(client))["update"]
