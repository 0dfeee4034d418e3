"""Process views through a real `forge supervise` (H12): a seat's shell, what it starts, and
walks that stop when the last holder lets go."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from forge.testing.supervised import Start, Supervised
from forge.testing.terminal_client import Client

pytestmark = pytest.mark.timeout(90)

A = {"org": "acme", "project": "proj", "label": "a"}
B = {"org": "acme", "project": "proj", "label": "b"}


@pytest.fixture
async def supervised(supervise: Start, tmp_path: Path) -> Supervised:
    project = tmp_path / "proj"
    project.mkdir()
    toml = f'[[projects]]\norg = "acme"\nname = "proj"\npath = "{project}"\nshell = "/bin/sh"\n'
    return await supervise(toml)


async def open_seat(supervised: Supervised, seat: dict[str, str]) -> tuple[Client, int, int]:
    """A client viewing the seat's terminal and holding its session: (client, id, shell pid)."""
    client = await Client.open(supervised.url)
    await client.send({"kind": "terminal_view", "seat": seat, "reply_to": 1})
    reply = await client.next_of_kind("reply")
    assert reply["body"]["ok"] is True, reply
    await client.send({"kind": "subscribe", "what": {"session": seat}})
    snapshot = (await client.next_of_kind("snapshot"))["data"]
    assert snapshot["processes"] is None  # nothing has walked the seat yet
    return client, reply["body"]["id"], snapshot["terminal"]["pid"]


async def processes_where(client: Client, check: Any) -> list[dict[str, Any]] | None:
    """The first `processes_changed` body's processes (from the start) for which `check` holds."""
    found: list[Any] = []

    def seen() -> bool:
        found[:] = [u for u in client.updates("processes_changed") if check(u["processes"])]
        return bool(found)

    await client.until(seen)
    processes: list[dict[str, Any]] | None = found[0]["processes"]
    return processes


def has(command: list[str]) -> Any:
    return lambda rows: rows is not None and any(r["cmdline"] == command for r in rows)


def lines_after(supervised: Supervised, record: dict[str, Any]) -> list[dict[str, Any]]:
    """This run's log records that follow `record`, in the order they were written."""
    with supervised.log.open("rb") as log:
        log.seek(supervised.since)
        records = [json.loads(line) for line in log.read().decode().splitlines()]
    return records[records.index(record) + 1 :]


async def test_a_held_seat_shows_its_shell_and_what_it_starts(supervised: Supervised) -> None:
    client, terminal, shell = await open_seat(supervised, A)
    first = await processes_where(client, lambda rows: rows is not None)
    assert first is not None
    assert first[0]["pid"] == shell
    assert set(first[0]) == {
        "pid", "ppid", "name", "cmdline", "cpu_percent", "rss_bytes", "started_ms"
    }  # fmt: skip
    update = next(
        f for f in client.frames if f["kind"] == "update" and "processes_changed" in f["update"]
    )
    assert update["update"]["processes_changed"]["key"] == A
    assert isinstance(update["seq"], int)

    await client.type(terminal, b"sleep 30 &\r")
    rows = await processes_where(client, has(["sleep", "30"]))
    assert rows is not None
    sleep = next(r for r in rows if r["cmdline"] == ["sleep", "30"])
    assert sleep["ppid"] == shell

    again = await Client.open(supervised.url)
    await again.send({"kind": "subscribe", "what": {"session": A}})
    snapshot = (await again.next_of_kind("snapshot"))["data"]
    assert snapshot["processes"] is not None  # the last walk


async def test_walks_stop_with_the_last_holder_and_an_ended_session_is_cleared(
    supervised: Supervised,
) -> None:
    watcher_a, terminal_a, _ = await open_seat(supervised, A)
    second_a = await Client.open(supervised.url)
    for count in range(2):  # counted: one unsubscribe below leaves it holding the seat
        await second_a.send({"kind": "subscribe", "what": {"session": A}})
        await second_a.next_of_kind("snapshot", after=count)
    watcher_b, terminal_b, _ = await open_seat(supervised, B)
    await processes_where(watcher_a, lambda rows: rows is not None)

    await watcher_a.send({"kind": "unsubscribe", "what": {"session": A}})
    await second_a.send({"kind": "unsubscribe", "what": {"session": A}})
    await second_a.send({"kind": "subscribe", "what": "home"})  # answered after the unsubscribe
    await second_a.next_of_kind("snapshot", after=2)
    await watcher_a.type(terminal_a, b"sleep 31 &\r")
    await processes_where(second_a, has(["sleep", "31"]))  # still held: still walked
    assert not supervised.records("seat_processes_released")

    await second_a.close()
    released = await supervised.record("seat_processes_released", seat="acme/proj/a")
    await watcher_b.type(terminal_b, b"sleep 32 &\r")
    await processes_where(watcher_b, has(["sleep", "32"]))
    await watcher_b.type(terminal_b, b"exit\r")
    assert await processes_where(watcher_b, lambda rows: rows is None) is None

    walks = [r for r in lines_after(supervised, released) if r["record"] == "seat_processes_walk"]
    assert walks, "seat b was walked after a was released"
    assert all(r["seats"] == ["acme/proj/b"] for r in walks)
