"""The terminal verbs through the real socket, with real hosts and real shells (TM01-TM14)."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import psutil
import pytest

from forge.supervisor.terminals import TerminalHeld
from forge.wire.seats import Seat

from .socket_client import SEAT, Client, Served, serve_terminals

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
async def served(
    forge_dirs: dict[str, Path], free_port: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Served]:
    monkeypatch.setenv("PS1", "$ ")
    monkeypatch.setenv("HOME", str(tmp_path))
    project = tmp_path / "project"
    project.mkdir()
    async with serve_terminals(project, forge_dirs["config"], free_port) as running:
        yield running


async def attach(served: Served, reply_to: int = 1, **extra: object) -> tuple[Client, int]:
    client = await Client.open(served.url)
    await client.send({"kind": "terminal_view", "seat": SEAT, "reply_to": reply_to, **extra})
    reply = await client.next_of_kind("reply")
    assert reply["body"]["ok"] is True, reply
    await client.next_of_kind("terminal_view")
    return client, reply["body"]["id"]


async def test_first_view_opens_a_shell_in_order_reply_view_chunks(served: Served) -> None:
    client, terminal = await attach(served)
    assert terminal == 1
    await client.wait_screen("$ ")
    await client.type(terminal, b"echo hi\r")
    await client.wait_output(b"hi\r\n")
    kinds = [k if k == "chunk" else f["kind"] for k, f in client.events]
    assert kinds.index("reply") < kinds.index("terminal_view") < kinds.index("chunk")
    view = client.of_kind("terminal_view")[0]
    assert (view["cols"], view["rows"], view["viewer"], view["controller"]) == (80, 24, 1, None)
    assert view["viewers"] == 1
    first_chunk = next(seq for kind, seq in client.events if kind == "chunk")
    assert first_chunk == view["seq"] + 1

    await client.send({"kind": "subscribe", "what": {"session": SEAT}})
    snapshot = await client.next_of_kind("snapshot")
    summary = snapshot["data"]["terminal"]
    assert summary["id"] == terminal
    assert summary["cwd"].endswith("project")
    assert {"id", "shell", "cwd", "cols", "rows", "alive", "state", "source", "title", "held"} <= (
        summary.keys()
    )
    await client.type(terminal, b"sleep 1\r")
    await client.until(
        lambda: any(u["terminal"]["state"] == "running" for u in client.updates("terminal_changed"))
    )
    await client.until(
        lambda: client.updates("terminal_changed")[-1]["terminal"]["state"] == "idle"
    )
    await client.type(terminal, b"read -s secret\r")
    await client.until(
        lambda: client.updates("terminal_changed")[-1]["terminal"]["state"] == "password"
    )
    await client.type(terminal, b"x\rexit 4\r")
    await client.until(lambda: client.updates("terminal_changed")[-1]["terminal"]["alive"] is False)
    last = client.updates("terminal_changed")[-1]
    assert last["key"] == SEAT
    assert last["terminal"]["exit_status"] == 4
    await client.close()


async def test_a_foreign_id_is_refused(served: Served) -> None:
    client, _ = await attach(served)
    other = {**SEAT, "label": "other"}
    await client.send({"kind": "terminal_view", "seat": other, "id": 1, "reply_to": 9})
    reply = await client.next_of_kind("reply", after=1)
    assert reply["body"]["ok"] is False
    assert "not a terminal of seat acme/forge/other" in reply["body"]["why"]
    await client.send({"kind": "terminal_view", "seat": other, "id": 1})
    error = await client.next_of_kind("error")
    assert error["what"] == "terminal_view"
    await client.close()


async def test_a_second_viewer_draws_the_same_screen_mid_stream(served: Served) -> None:
    first, terminal = await attach(served)
    await first.wait_screen("$ ")
    await first.type(terminal, b"seq 1 40000; echo DONE\r")
    await first.wait_output(b"5000")
    second, same = await attach(served)
    assert same == terminal
    for client in (first, second):
        await client.until(lambda c=client: b"$ " in c.output().partition(b"DONE\r\n")[2])
    assert second.screen().display == first.screen().display
    assert second.of_kind("terminal_view")[0]["viewer"] == 2
    await first.close()
    await second.close()


async def test_control_hand_over_and_refused_input_from_a_watcher(served: Served) -> None:
    alice, terminal = await attach(served)
    bob, _ = await attach(served)
    await alice.wait_screen("$ ")
    control = {"kind": "terminal_control", "seat": SEAT, "id": terminal}
    await alice.send({**control, "take": True})
    seen = await bob.next_of_kind("terminal_control")
    assert seen["controller"] == 1
    await alice.next_of_kind("terminal_control")
    await bob.type(terminal, b"echo from-bob\r")
    await alice.type(terminal, b"echo from-alice\r")
    await alice.wait_output(b"from-alice\r\n")
    assert b"from-bob" not in alice.output()

    await bob.send({**control, "take": True})
    assert (await alice.next_of_kind("terminal_control", after=1))["controller"] == 2
    await alice.send({**control, "take": False})  # not hers to release: nothing happens
    await bob.type(terminal, b"echo bob-now\r")
    await alice.wait_output(b"bob-now\r\n")
    assert len(alice.of_kind("terminal_control")) == 2
    with pytest.raises(TerminalHeld, match="controlled by viewer 2"):
        served.service.agent_write(Seat(**SEAT), b"ls\r")

    await bob.close()  # a dropped controller releases control
    assert (await alice.next_of_kind("terminal_control", after=2))["controller"] is None
    await alice.close()


async def test_resize_pause_and_resume(served: Served) -> None:
    client, terminal = await attach(served)
    await client.wait_screen("$ ")
    resize = {"kind": "terminal_resize", "seat": SEAT, "id": terminal}
    await client.send({**resize, "cols": 100, "rows": 30})
    await client.type(terminal, b"stty size\r")
    await client.wait_output(b"30 100")
    await client.send({**resize, "cols": 501, "rows": 30})
    assert (await client.next_of_kind("error"))["what"] == "terminal_resize"

    await client.send({"kind": "terminal_pause", "paused": True})
    await client.send({"kind": "ping"})
    await client.next_of_kind("pong")
    chunks = len(client.chunks)
    await client.type(terminal, b"echo while-paused\r")
    await client.send({"kind": "ping"})
    await client.next_of_kind("pong", after=1)
    await client.send({"kind": "terminal_pause", "paused": False})
    view = await client.next_of_kind("terminal_view", after=1)
    assert (view["cols"], view["rows"]) == (100, 30)
    await client.until(lambda: "while-paused" in "\n".join(client.screen().display))
    assert all(seq > view["seq"] for seq, _ in client.chunks[chunks:])
    await client.close()


async def test_close_kills_jobs_and_the_next_view_starts_a_fresh_shell(served: Served) -> None:
    client, terminal = await attach(served)
    await client.send({"kind": "subscribe", "what": {"session": SEAT}})
    await client.next_of_kind("snapshot")
    await client.wait_screen("$ ")
    await client.type(terminal, b"sleep 999 & echo JOB=$!\r")
    await client.until(lambda: re.search(rb"JOB=(\d+)\r\n", client.output()) is not None)
    job = int(re.findall(rb"JOB=(\d+)\r\n", client.output())[0])
    await client.send({"kind": "terminal_close", "seat": SEAT, "id": terminal})
    error = await client.next_of_kind("error")
    assert (error["what"], error["why"]) == ("terminal_close", f"terminal {terminal} closed")
    await client.until(lambda: client.updates("terminal_changed")[-1]["terminal"] is None)
    assert not psutil.pid_exists(job) or psutil.Process(job).status() == psutil.STATUS_ZOMBIE
    await client.send({"kind": "terminal_view", "seat": SEAT, "reply_to": 2})
    reply = await client.next_of_kind("reply", after=1)
    assert reply["body"]["id"] == terminal + 1
    await client.close()


async def test_a_killed_host_is_reported_and_other_terminals_live_on(served: Served) -> None:
    victim, terminal = await attach(served)
    other_seat = {**SEAT, "label": "other"}
    bystander = await Client.open(served.url)
    await bystander.send({"kind": "terminal_view", "seat": other_seat, "reply_to": 1})
    other = (await bystander.next_of_kind("reply"))["body"]["id"]
    await victim.send({"kind": "subscribe", "what": {"session": SEAT}})
    await victim.next_of_kind("snapshot")
    await victim.wait_screen("$ ")
    host = served.service._terminals[terminal].handle.pid
    assert host is not None
    os.kill(host, signal.SIGKILL)
    error = await victim.next_of_kind("error")
    assert error["what"] == "terminal_view"
    assert "worker_crashed" in error["why"]
    await victim.until(lambda: victim.updates("terminal_changed")[-1]["terminal"]["alive"] is False)
    await bystander.wait_screen("$ ")
    await bystander.type(other, b"echo alive\r")
    await bystander.wait_output(b"alive\r\n")
    await victim.send({"kind": "terminal_view", "seat": SEAT, "reply_to": 5})
    reply = await victim.next_of_kind("reply", after=1)
    assert reply["body"]["ok"] is True
    assert reply["body"]["id"] not in (terminal, other)
    await victim.close()
    await bystander.close()
