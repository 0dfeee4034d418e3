"""The service on a clock the test drives: held seats walked once a tick, released ones never;
only what moved is published; a seat whose shells are gone is cleared. The walker is real."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from forge.config import load_config
from forge.ipc.manager import WorkerManager
from forge.procs import is_live
from forge.supervisor.processes import ProcessViews
from forge.supervisor.socket.core import Supervisor
from forge.testing.clock import ManualClock
from forge.wire.seats import Seat

from .conftest import commands, until

A = Seat("acme", "proj", "a")
B = Seat("acme", "proj", "b")


class Rig:
    def __init__(self, supervisor: Supervisor, views: ProcessViews, clock: ManualClock) -> None:
        self.supervisor = supervisor
        self.views = views
        self.clock = clock
        self.roots: dict[Seat, list[int]] = {}

    async def settle(self, predicate: Callable[[], bool]) -> None:
        """Until `predicate` holds and the walk loop is parked: on the clock while a seat is
        held (its walk done and published), idle otherwise."""
        await until(lambda: predicate() and self.clock.sleepers == (1 if self.held else 0))

    async def tick(self) -> None:
        """Move the clock one interval and wait for the loop to be parked again (the advance
        woke its sleep, so a sleeper again means the tick ran)."""
        self.clock.advance(1.0)
        await self.settle(lambda: True)

    @property
    def held(self) -> bool:
        return bool(self.views.held)

    def published(self, seat: Seat) -> list[Any]:
        """The `processes` of every `processes_changed` the seat numbered, in order."""
        state = self.supervisor.seats.get(seat)
        assert state is not None
        frames = state.window.range(state.epoch, 1, state.window.next_seq - 1)
        updates = [msgspec.json.decode(update) for _, update in frames]  # kept as JSON text
        return [u["processes_changed"]["processes"] for u in updates if "processes_changed" in u]


@pytest.fixture
async def rig(forge_dirs: dict[str, Path], tmp_path: Path) -> AsyncIterator[Rig]:
    project = tmp_path / "proj"
    project.mkdir()
    toml = tmp_path / "forge.toml"
    toml.write_text(f'[[projects]]\norg = "acme"\nname = "proj"\npath = "{project}"\n')
    clock = ManualClock()
    supervisor = Supervisor(load_config(toml), clock=clock)
    async with WorkerManager() as manager:
        views = ProcessViews(supervisor, manager, lambda seat: rig.roots.get(seat, []))
        rig = Rig(supervisor, views, clock)
        for seat in (A, B):
            await supervisor.start_seat(seat)
        yield rig
        await views.stop()


async def test_a_held_seat_is_walked_each_tick_and_a_released_one_never(
    rig: Rig, session_leader: asyncio.subprocess.Process
) -> None:
    rig.roots = {A: [session_leader.pid], B: [session_leader.pid]}
    views = rig.views
    views.hold(A)
    views.hold(B)
    await rig.settle(lambda: views.walks[A] == 1 and views.walks[B] == 1)
    for _ in range(2):
        await rig.tick()
    assert (views.walks[A], views.walks[B]) == (3, 3)

    views.release(A)
    for _ in range(3):
        await rig.tick()
    assert (views.walks[A], views.walks[B]) == (3, 6)

    views.release(B)
    await rig.tick()
    await rig.tick()
    assert (views.walks[A], views.walks[B]) == (3, 6)
    assert rig.clock.sleepers == 0  # idle: nothing is held, so nothing waits on the clock

    views.hold(A)
    await rig.settle(lambda: views.walks[A] == 4)


async def test_only_what_moved_is_published_and_an_ended_session_is_cleared(
    rig: Rig, session_leader: asyncio.subprocess.Process
) -> None:
    state = rig.supervisor.seats.get(A)
    assert state is not None
    assert state.processes is None
    rig.roots[A] = [session_leader.pid]
    rig.views.hold(A)
    await rig.settle(lambda: len(rig.published(A)) == 1)
    [first] = rig.published(A)
    assert state.processes == first
    assert first[0]["pid"] == session_leader.pid
    assert ["sleep", "60"] in commands(first)

    await rig.tick()
    await rig.tick()
    assert len(rig.published(A)) == 1  # sleeping processes: nothing moved

    plain = next(row["pid"] for row in first if row["cmdline"] == ["sleep", "60"])
    os.kill(plain, signal.SIGKILL)
    await until(lambda: not is_live(plain))
    await rig.tick()
    assert len(rig.published(A)) == 2
    assert ["sleep", "60"] not in commands(rig.published(A)[-1])

    rig.roots[A] = []
    await rig.tick()
    assert rig.published(A)[-1] is None
    assert state.processes is None
    await rig.tick()
    assert len(rig.published(A)) == 3


async def test_a_seat_without_a_shell_is_never_walked_and_stays_null(rig: Rig) -> None:
    rig.views.hold(B)
    await rig.tick()
    await rig.tick()
    assert rig.views.walks[B] == 0
    assert rig.published(B) == []


async def test_a_walker_killed_between_walks_is_restarted_and_walking_goes_on(
    rig: Rig, session_leader: asyncio.subprocess.Process
) -> None:
    rig.roots[A] = [session_leader.pid]
    rig.views.hold(A)
    await rig.settle(lambda: len(rig.published(A)) == 1)
    walker = rig.views.walker
    assert walker is not None
    assert walker.pid is not None
    os.kill(walker.pid, signal.SIGKILL)
    await walker.wait_for(lambda row: row.restarts == 1)

    sibling = await asyncio.create_subprocess_exec("sleep", "63", start_new_session=True)
    try:
        rig.roots[A] = [session_leader.pid, sibling.pid]
        await rig.tick()
        await until(lambda: ["sleep", "63"] in commands(rig.published(A)[-1] or []))
    finally:
        sibling.kill()
        await sibling.wait()
