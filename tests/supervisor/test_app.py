"""The composed supervisor: the health verdict on home, as `forge supervise` runs it."""

from __future__ import annotations

import asyncio
import gc
import json
import signal
import subprocess
import sys
import weakref
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from forge.allocator import TRIM_EVERY_S
from forge.health.service import home_service_status
from forge.supervisor.app import COLLECT_EVERY, _give_back_freed
from forge.supervisor.socket.core import Supervisor
from forge.testing.clock import ManualClock
from forge.testing.supervised import Start


def _verdict(state: str, pending: int = 0, set_aside: int = 0) -> dict[str, Any]:
    return {
        "state": state,
        "reason": "r",
        "sample": {},
        "cache": {},
        "queue": {"pending": pending, "set_aside": set_aside, "projects": []},
    }


@pytest.mark.parametrize(
    ("verdict", "shown"),
    [
        (_verdict("operational"), False),
        (_verdict("unknown"), False),
        (_verdict("degraded"), True),
        (_verdict("unreachable"), True),
        (_verdict("operational", pending=1), True),
        (_verdict("unknown", set_aside=2), True),
    ],
)
def test_home_shows_a_verdict_only_when_it_has_news(verdict: dict[str, Any], shown: bool) -> None:
    assert home_service_status(verdict) == (verdict if shown else None)


@pytest.fixture
def recorded_outage(forge_dirs: dict[str, Path]) -> None:
    """Three network failures recorded through `forge health record`, as the shim would."""
    for _ in range(3):
        subprocess.run(
            [sys.executable, "-m", "forge.cli", "health", "record", "--rc", "1", "--signal", "net"],
            check=True,
        )


@pytest.mark.usefixtures("recorded_outage")
async def test_home_carries_the_recorded_forge_verdict(supervise: Start) -> None:
    supervised = await supervise()
    client = await supervised.greeted()
    await client.send(json.dumps({"kind": "subscribe", "what": "home"}))
    home = json.loads(await client.recv())
    status = home["data"]["service_status"]
    assert status["state"] == "unreachable"
    assert set(status) == {"state", "reason", "sample", "cache", "queue"}


async def _next_update(client: Any, variant: str) -> dict[str, Any]:
    while True:
        message = await client.recv()
        if isinstance(message, str):
            frame = json.loads(message)
            if frame["kind"] == "update" and variant in frame["update"]:
                body: dict[str, Any] = frame["update"][variant]
                return body


async def test_home_lists_a_terminals_host_until_the_terminal_is_closed(
    supervise: Start, tmp_path: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    supervised = await supervise(
        f'[[projects]]\norg = "acme"\nname = "web"\npath = "{project}"\nshell = "/bin/sh"\n'
    )
    seat = {"org": "acme", "project": "web", "label": "main"}
    client = await supervised.greeted()
    await client.send(json.dumps({"kind": "subscribe", "what": "home"}))
    assert _hosts(json.loads(await client.recv())["data"]) == []
    await client.send(json.dumps({"kind": "terminal_view", "seat": seat, "reply_to": 1}))
    while [row["state"] for row in _hosts(await _next_update(client, "workers_changed"))] != [
        "ready"
    ]:
        pass
    await client.send(json.dumps({"kind": "terminal_close", "seat": seat, "id": 1}))
    while _hosts(await _next_update(client, "workers_changed")):
        pass


def _hosts(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of `workers` but the tree worker's (it runs for the supervisor's lifetime)."""
    return [row for row in body["workers"] if row["kind"] != "trees"]


async def test_sigusr1_logs_a_census_of_live_objects_and_what_grew_since_the_last(
    supervise: Start,
) -> None:
    supervised = await supervise()
    supervised.process.send_signal(signal.SIGUSR1)
    first = await supervised.record("census")
    assert first["grown"] == []  # nothing to compare the first with
    assert isinstance(first["garbage"], int)  # what the full collection before it found
    kinds = dict(first["most"])
    assert kinds["builtins.dict"] > 1000
    assert first["objects"] >= sum(kinds.values())
    lengths = [length for _, length, _ in first["largest"]]
    assert len(lengths) == 10
    assert lengths == sorted(lengths, reverse=True)
    clients = [await supervised.greeted() for _ in range(3)]
    supervised.process.send_signal(signal.SIGUSR1)
    second = await supervised.record("census", nth=1)
    grown = {kind: after - before for kind, before, after in second["grown"]}
    assert grown["forge.supervisor.socket.connection.Connection"] == len(clients)
    assert first["holders"] == {}
    assert list(second["holders"]) == [kind for kind, _, _ in second["grown"][:3]]
    steps = [step for chain in second["holders"].values() for step in chain]
    assert all(isinstance(step, str) for step in steps)  # a chain is empty when frames alone hold
    assert await clients[0].ping() is not None


class _Cycle:
    """Holds itself: only a full collection frees it."""

    def __init__(self) -> None:
        self.me = self


async def test_the_heap_loop_collects_cycles_every_ten_minutes() -> None:
    """Cycles wait for CPython's rare full collection; the supervisor runs one every
    `COLLECT_EVERY` trims."""
    clock = ManualClock()
    supervisor = cast(Supervisor, SimpleNamespace(clock=clock, seats=[]))
    gc.disable()  # only the loop's own collection may free the cycle
    loop = asyncio.create_task(_give_back_freed(supervisor))
    try:
        cycle = weakref.ref(_Cycle())
        for trim in range(1, COLLECT_EVERY + 1):
            await asyncio.sleep(0)  # one turn: the loop's body runs up to its next sleep
            assert clock.sleepers == 1
            assert cycle() is not None, f"collected after {trim - 1} trims"
            clock.advance(TRIM_EVERY_S)
        await asyncio.sleep(0)
        assert clock.sleepers == 1
        assert cycle() is None
        assert COLLECT_EVERY * TRIM_EVERY_S == 600.0  # ten minutes
    finally:
        gc.enable()
        loop.cancel()
