"""The terminal verbs through the real socket, with real hosts and real shells (TM01-TM14)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from forge.ipc.manager import WorkerHandle
from forge.ipc.protocol import call
from forge.supervisor.socket.connection import Connection
from forge.supervisor.terminal.flow import CONTROLLER_LIMIT
from forge.supervisor.terminal.service import TerminalHeld
from forge.testing.terminal_client import SEAT, Client, Served, serve_terminals
from forge.wire.seats import Seat
from forge.workers.terminal.flow import UNPARSED_HIGH
from forge.workers.terminal.protocol import Stats

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


async def attach_at_prompt(served: Served, *, subscribed: bool = False) -> tuple[Client, int]:
    """Attach; subscribe to the seat's session when asked; wait for the shell's prompt."""
    client, terminal = await attach(served)
    if subscribed:
        await client.send({"kind": "subscribe", "what": {"session": SEAT}})
        await client.next_of_kind("snapshot")
    await client.wait_screen("$ ")
    return client, terminal


def last_summary(client: Client) -> dict[str, Any]:
    """The seat's terminal as the client last heard it (an update, else the snapshot)."""
    updates = client.updates("terminal_changed")
    if updates:
        summary: dict[str, Any] = updates[-1]["terminal"] or {}
        return summary
    snapshot: dict[str, Any] = client.of_kind("snapshot")[-1]["data"]["terminal"] or {}
    return snapshot


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
    await client.until(lambda: last_summary(client)["state"] == "idle")
    await client.type(terminal, b"read -s secret\r")
    await client.until(lambda: last_summary(client)["state"] == "password")
    await client.type(terminal, b"x\rexit 4\r")
    await client.until(lambda: last_summary(client)["alive"] is False)
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
    await first.wait_prompt_after(b"DONE\r\n")
    last = first.chunks[-1][0]

    def second_has_all() -> bool:
        seen = [seq for seq, _ in second.chunks] + [second.of_kind("terminal_view")[-1]["seq"]]
        return max(seen) >= last

    await second.until(second_has_all)
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

    host = served.service.hosts.terminals[terminal].handle
    await client.send({"kind": "terminal_pause", "paused": True})
    await client.send({"kind": "ping"})
    await client.next_of_kind("pong")
    while not (await call(host, Stats())).muted:  # noqa: ASYNC110 - asked, not pushed
        await asyncio.sleep(0.01)  # the only viewer paused: the host stops sending frames
    chunks = len(client.chunks)
    await client.type(terminal, b"echo while-paused\r")
    await client.send({"kind": "ping"})
    await client.next_of_kind("pong", after=1)
    await client.send({"kind": "terminal_pause", "paused": False})
    view = await client.next_of_kind("terminal_view", after=1)
    assert (view["cols"], view["rows"]) == (100, 30)
    assert (await call(host, Stats())).muted is False
    await client.until(lambda: "while-paused" in "\n".join(client.screen().display))
    assert all(seq > view["seq"] for seq, _ in client.chunks[chunks:])
    await client.close()


async def test_close_kills_jobs_and_the_next_view_starts_a_fresh_shell(served: Served) -> None:
    client, terminal = await attach_at_prompt(served, subscribed=True)
    await client.type(terminal, b"sleep 999 & echo JOB=$!\r")
    await client.until(lambda: re.search(rb"JOB=(\d+)\r\n", client.data) is not None)
    job = int(re.findall(rb"JOB=(\d+)\r\n", client.output())[0])
    await client.send({"kind": "terminal_close", "seat": SEAT, "id": terminal})
    error = await client.next_of_kind("error")
    assert (error["what"], error["why"]) == ("terminal_close", f"terminal {terminal} closed")
    await client.until(lambda: last_summary(client) == {})
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
    host = served.service.hosts.terminals[terminal].handle.pid
    assert host is not None
    os.kill(host, signal.SIGKILL)
    error = await victim.next_of_kind("error")
    assert error["what"] == "terminal_view"
    assert "worker_crashed" in error["why"]
    await victim.until(lambda: last_summary(victim)["alive"] is False)
    await bystander.wait_screen("$ ")
    await bystander.type(other, b"echo alive\r")
    await bystander.wait_output(b"alive\r\n")
    await victim.send({"kind": "terminal_view", "seat": SEAT, "reply_to": 5})
    reply = await victim.next_of_kind("reply", after=1)
    assert reply["body"]["ok"] is True
    assert reply["body"]["id"] not in (terminal, other)
    await victim.close()
    await bystander.close()


async def test_two_viewers_reopening_together_after_a_crash_share_one_shell(
    served: Served,
) -> None:
    """Found by bench/chaos.py: two id-less views of a seat whose host had died raced; the second
    closed the shell the first was still starting (its summary not yet in), the first's viewers
    were told `closed` and reopened, and the two went on closing each other's shells for good
    (with a KeyError from the manager and EBADF in the host on the way)."""
    first, terminal = await attach(served)
    second = await Client.open(served.url)
    await second.send({"kind": "terminal_view", "seat": SEAT, "id": terminal, "reply_to": 1})
    assert (await second.next_of_kind("reply"))["body"]["ok"] is True
    host = served.service.hosts.terminals[terminal].handle.pid
    assert host is not None
    os.kill(host, signal.SIGKILL)
    await first.next_of_kind("error")
    await second.next_of_kind("error")
    await asyncio.gather(
        first.send({"kind": "terminal_view", "seat": SEAT, "reply_to": 2}),
        second.send({"kind": "terminal_view", "seat": SEAT, "reply_to": 2}),
    )
    replies = [(await c.next_of_kind("reply", after=1))["body"] for c in (first, second)]
    assert replies[0]["ok"], replies
    assert replies[1]["ok"], replies
    assert replies[0]["id"] == replies[1]["id"] != terminal
    await first.wait_screen("$ ")
    await quiet_closes(first, second)
    await first.close()
    await second.close()


async def quiet_closes(*clients: Client) -> None:
    """No client was told its terminal closed: a ping's pong follows with no error before it."""
    for client in clients:
        errors = len(client.of_kind("error"))
        await client.send({"kind": "ping"})
        await client.next_of_kind("pong")
        assert len(client.of_kind("error")) == errors == 1, client.of_kind("error")


async def small_window_client(served: Served) -> Client:
    """A client whose kernel receive buffer is small, so a stall backs up into the server."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
    sock.connect(("127.0.0.1", int(served.url.split(":")[2].split("/")[0])))
    return await Client.open(served.url, sock=sock, max_queue=1)


def server_side(served: Served, count: int) -> list[Connection]:
    connections = sorted(served.supervisor.connections, key=lambda c: c.id)
    assert len(connections) == count
    return connections


async def test_a_stalled_viewer_gets_a_fresh_screen_and_never_slows_the_fast_one(
    served: Served,
) -> None:
    fast, terminal = await attach(served)
    # The fast viewer controls: it paces the shell (a watcher that cannot keep up is dropped).
    await fast.send({"kind": "terminal_control", "seat": SEAT, "id": terminal, "take": True})
    stalled = await small_window_client(served)
    await stalled.send({"kind": "terminal_view", "seat": SEAT, "reply_to": 1})
    await stalled.next_of_kind("terminal_view")
    await fast.wait_screen("$ ")
    stalled.reading.clear()
    await fast.type(terminal, b"seq 1 2000000; echo DONE\r")
    await fast.wait_prompt_after(b"DONE\r\n")
    assert_in_order(fast)
    assert len(fast.of_kind("terminal_view")) == 1
    assert b"\r\n2000000\r\n" in fast.output()
    assert stalled.of_kind("terminal_view")[-1]["controller"] == 1
    _, behind = server_side(served, 2)
    assert behind.pending_bytes <= 1024 * 1024 + 64 * 1024
    stalled.reading.set()

    def caught_up() -> bool:
        redrawn = len(stalled.of_kind("terminal_view")) >= 2
        return redrawn or b"$ " in bytes(stalled.data[-4096:]).partition(b"DONE\r\n")[2]

    await stalled.until(caught_up)
    final, _ = await attach(served)
    if len(stalled.of_kind("terminal_view")) >= 2:  # the usual case: dropped to a fresh view
        await stalled.wait_screen("DONE")
        assert stalled.screen().display == final.screen().display
    else:  # the kernel's buffers held the whole flood: then not one chunk may be missing
        assert_in_order(stalled)
    for client in (fast, stalled, final):
        await client.close()


async def test_a_stalled_controller_holds_the_shell_back_and_loses_nothing(
    served: Served,
) -> None:
    controller = await small_window_client(served)
    await controller.send({"kind": "terminal_view", "seat": SEAT, "reply_to": 1})
    terminal = (await controller.next_of_kind("reply"))["body"]["id"]
    await controller.send({"kind": "terminal_control", "seat": SEAT, "id": terminal, "take": True})
    await controller.next_of_kind("terminal_control")
    await controller.wait_screen("$ ")
    host = served.service.hosts.terminals[terminal].handle
    controller.reading.clear()
    await controller.type(terminal, b"head -c 12000000 /dev/zero | tr '\\0' '\\132'; echo E''ND\r")

    async def shell_held() -> None:
        while "controller" not in (await call(host, Stats())).paused:  # noqa: ASYNC110
            await asyncio.sleep(0.01)

    await shell_held()
    (connection,) = server_side(served, 1)
    assert connection.pending_bytes <= CONTROLLER_LIMIT
    controller.reading.set()
    await controller.wait_output(b"END\r\n")
    assert controller.output().count(b"Z") == 12_000_000
    assert_in_order(controller)
    assert len(controller.of_kind("terminal_view")) == 1
    assert (await call(host, Stats())).paused == []
    await controller.close()


async def test_every_byte_printed_before_exit_reaches_the_viewer(served: Served) -> None:
    client, terminal = await attach_at_prompt(served, subscribed=True)
    # As controller: a watcher that falls behind is dropped to a fresh view by design (TM05),
    # which on a loaded machine would make the byte count a race instead of a contract.
    await client.send({"kind": "terminal_control", "seat": SEAT, "id": terminal, "take": True})
    await client.next_of_kind("terminal_control")
    await client.type(terminal, b"head -c 3000000 /dev/zero | tr '\\0' '\\132'; exit 0\r")
    await client.until(lambda: last_summary(client)["alive"] is False)
    exited = max(
        i for i, (kind, f) in enumerate(client.events) if kind == "json" and f["kind"] == "update"
    )
    assert all(kind == "json" for kind, _ in client.events[exited:])
    assert client.output().count(b"Z") == 3_000_000
    await client.close()


async def test_the_seats_live_shells_are_its_process_roots(served: Served) -> None:
    client, _ = await attach_at_prompt(served, subscribed=True)
    seat = Seat(**SEAT)
    [pid] = served.service.shell_pids(seat)
    assert pid == last_summary(client)["pid"]
    assert psutil.Process(pid).name() == "bash"
    assert served.service.shell_pids(Seat("acme", "forge", "other")) == []
    await client.close()


async def test_a_terminal_that_cannot_start_leaves_no_host_behind(served: Served) -> None:
    """Refused, and its host is gone from the manager and the workers table: a failed start
    kept a stopped worker and its three sockets for the supervisor's life."""
    served.service.host_config["argv"] = ["/nonexistent/shell"]
    client = await Client.open(served.url)
    await client.send({"kind": "terminal_view", "seat": SEAT, "reply_to": 1})
    reply = await client.next_of_kind("reply")
    assert reply["body"]["ok"] is False
    assert reply["body"]["why"].startswith("the terminal could not start: ")
    assert "cannot start shell '/nonexistent/shell'" in reply["body"]["why"]
    assert served.service.manager.rows() == []
    await client.close()


async def test_a_controller_that_acks_paces_the_shell_by_what_it_has_not_parsed(
    served: Served,
) -> None:
    """A controller that acks (`terminal_ack`) and stops acking stops the shell, though it reads
    every byte it is sent (a browser does: the bytes wait in its page, unparsed); each ack of
    what it got lets more come, and nothing is lost or replaced by a fresh view."""
    controller, terminal = await attach_at_prompt(served)
    await controller.send({"kind": "terminal_control", "seat": SEAT, "id": terminal, "take": True})
    await controller.next_of_kind("terminal_control")
    host = served.service.hosts.terminals[terminal].handle
    await controller.send({"kind": "terminal_ack", "seq": 0})
    await controller.type(terminal, b"head -c 3000000 /dev/zero | tr '\\0' '\\132'; echo E''ND\r")
    acked, holds = 0, 0
    while (seq := await held_back_or_done(host, controller, acked)) is not None:
        await controller.until(lambda: controller.chunks[-1][0] >= seq)  # all it was sent
        unparsed = sum(len(chunk) for chunk_seq, chunk in controller.chunks if chunk_seq > acked)
        assert unparsed > UNPARSED_HIGH  # held back only for what it had not parsed
        holds += 1
        acked = controller.chunks[-1][0]
        await controller.send({"kind": "terminal_ack", "seq": acked})
    assert holds >= 1
    assert controller.output().count(b"Z") == 3_000_000
    assert_in_order(controller)
    assert len(controller.of_kind("terminal_view")) == 1
    await controller.close()


async def test_a_watchers_acks_pace_nothing(served: Served) -> None:
    """A watcher that acks once and never again does not stop the shell: the controller gets
    the whole flood (a slow phone never slows the typist; its page pauses and takes a fresh
    view instead, and this one may be dropped to one)."""
    controller, terminal = await attach_at_prompt(served)
    await controller.send({"kind": "terminal_control", "seat": SEAT, "id": terminal, "take": True})
    watcher, _ = await attach(served, reply_to=2)
    await watcher.send({"kind": "terminal_ack", "seq": 0})
    await watcher.send({"kind": "subscribe", "what": "home"})
    await watcher.next_of_kind("snapshot")  # answered after the ack, in order
    await controller.type(terminal, b"head -c 3000000 /dev/zero | tr '\\0' '\\132'; echo E''ND\r")
    await controller.wait_output(b"END\r\n")
    assert controller.output().count(b"Z") == 3_000_000
    assert_in_order(controller)
    for client in (controller, watcher):
        await client.close()


async def held_back_or_done(host: WorkerHandle, client: Client, beyond: int = 0) -> int | None:
    """The host's seq once it is held back for the controller past seq `beyond`, with output
    waiting in its PTY and framing none of it between two asks (reading, it would: the flood
    is 3 MB, the PTY holds 4 KiB), or None once the shell has printed all it had to."""
    before = await call(host, Stats())
    while b"END\r\n" not in client.output():
        after = await call(host, Stats())
        held = after.paused == ["unparsed"] and after.unread > 0 and after.seq == before.seq
        if held and after.seq > beyond:
            return after.seq
        before = after
    return None


def assert_in_order(client: Client) -> None:
    """Every chunk the client got follows the one before it: none lost, none repeated."""
    seqs = [seq for seq, _ in client.chunks]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
