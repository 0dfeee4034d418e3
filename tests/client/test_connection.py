"""The client against a real `forge supervise`: greeting, subjects, events, refusals, the probe."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from forge.client.connection import ForgeConnection, connect
from forge.client.errors import ConnectionLost, ServerRefused, SupervisorUnreachable
from forge.client.frames import OtherFrame, Snapshot, TerminalOutput, Update
from forge.client.probe import ProbeTiming
from forge.supervisor.socket.drills import DrillListen, DrillSeatUpdate, DrillStartSeat, DrillStream
from forge.testing.clock import ManualClock
from forge.testing.supervised import Start
from forge.wire.client import Command
from forge.wire.seats import HOME, Seat, session

SEAT = Seat("acme", "proj", "lead")


async def next_other(connection: ForgeConnection, kind: str) -> OtherFrame:
    while True:
        event = await connection.next_event()
        if isinstance(event, OtherFrame) and event.kind == kind:
            return event


async def test_greeting_and_settings_are_read_on_open(supervise: Start, project_toml: str) -> None:
    supervised = await supervise(project_toml)
    async with connect(supervised.url) as connection:
        assert connection.greeting.version == 29
        assert connection.greeting.forge_version_short.startswith("0.")
        assert connection.settings.document["source"] == str(supervised.config)


async def test_subscribe_home_returns_its_snapshot(supervise: Start, project_toml: str) -> None:
    supervised = await supervise(project_toml)
    async with connect(supervised.url) as first, connect(supervised.url) as second:
        home = await first.subscribe(HOME)
        assert [p["project"]["name"] for p in home["projects"]] == ["proj"]
        assert [row["name"] for row in home["workers"]] == ["trees"]  # the tree worker alone
        assert home["forge_version"] == first.greeting.forge_version
        assert (await second.subscribe(HOME))["boot_id"] == home["boot_id"]


async def test_a_refused_subscribe_raises_with_the_servers_words(
    supervise: Start, project_toml: str
) -> None:
    supervised = await supervise(project_toml)
    async with connect(supervised.url) as connection:
        with pytest.raises(ServerRefused) as refused:
            await connection.subscribe(session(SEAT))
        assert refused.value.what == "subscribe"
        assert refused.value.why == "seat acme/proj/lead has not been started"
        assert (await connection.subscribe(HOME))["agents"] == []


async def test_an_error_naming_a_verb_fails_that_request(
    supervise: Start, project_toml: str
) -> None:
    supervised = await supervise(project_toml)
    async with connect(supervised.url) as connection:
        with pytest.raises(ServerRefused) as refused:
            await connection.request(Command(command="vault_lock"))
        assert refused.value.what == "command"
        assert "reply_to" in refused.value.why


async def test_updates_arrive_as_events_in_seq_order(supervise: Start, project_toml: str) -> None:
    supervised = await supervise(project_toml)
    async with connect(supervised.url) as connection:
        await connection.send(DrillStartSeat(seat=SEAT))
        await next_other(connection, "drill_done")
        snapshot = await connection.subscribe(session(SEAT))
        first_seq = snapshot["header"]["seq"]
        for n in range(3):
            await connection.send(DrillSeatUpdate(seat=SEAT, variant="work_changed", body={"n": n}))
        updates = [await connection.next_event() for _ in range(3)]
        assert all(isinstance(u, Update) for u in updates)
        assert [(u.variant, u.body["n"], u.seq) for u in updates if isinstance(u, Update)] == [
            ("work_changed", n, first_seq + n) for n in range(3)
        ]


async def test_kind_4_frames_arrive_typed_and_in_order(supervise: Start, project_toml: str) -> None:
    supervised = await supervise(project_toml)
    async with connect(supervised.url) as connection:
        await connection.send(DrillListen())
        await next_other(connection, "drill_done")
        await connection.send(DrillStream(count=600, size=100))
        chunks = []
        while len(chunks) < 600:
            event = await connection.next_event()
            assert isinstance(event, TerminalOutput)
            chunks.append(event)
        assert [c.seq for c in chunks] == list(range(1, 601))
        assert {c.data for c in chunks} == {bytes(100)}
        assert (await next_other(connection, "drill_done")).kind == "drill_done"


async def test_no_supervisor_is_said_in_words(free_port: int) -> None:
    url = f"ws://127.0.0.1:{free_port}/socket"
    with pytest.raises(SupervisorUnreachable) as unreachable:
        await ForgeConnection.open(url)
    assert str(unreachable.value) == (
        f"no forge supervisor at {url}: connection refused — start it with `forge supervise`"
    )
    assert unreachable.value.exit_code == 3


async def test_a_wrong_path_is_not_a_supervisor(supervise: Start) -> None:
    supervised = await supervise()
    with pytest.raises(SupervisorUnreachable, match="the server answered HTTP 404"):
        await ForgeConnection.open(f"ws://127.0.0.1:{supervised.port}/elsewhere")


async def parked(clock: ManualClock) -> None:
    """Let the loop run until something sleeps on `clock`."""
    for _ in range(1000):
        await asyncio.sleep(0)
        if clock.sleepers:
            return
    raise AssertionError("nothing sleeps on the clock")


async def beats(clock: ManualClock, seconds: int) -> None:
    """Move the clock one beat at a time, letting the probe task run after each."""
    for _ in range(seconds):
        clock.advance(1.0)
        for _ in range(100):
            await asyncio.sleep(0)
            if clock.sleepers:
                break


QUIET_SERVER = "[server]\nping_interval_s = 3600\n"
"""The server's own keepalive out of the way, so every byte is the probe's doing."""


async def test_the_probe_pings_after_15_quiet_seconds_and_a_pong_answers_it(
    supervise: Start,
) -> None:
    supervised = await supervise(QUIET_SERVER)
    clock = ManualClock()
    async with connect(supervised.url, clock=clock) as connection:
        await beats(clock, 14)
        assert not connection.probe_outstanding
        await beats(clock, 1)
        assert connection.probe_outstanding
        # The server answers in order, so once this snapshot is here the pong is too.
        await connection.subscribe(HOME)
        await beats(clock, 1)
        assert not connection.probe_outstanding
        await beats(clock, 20)
        assert connection.lost is None


async def test_a_probe_unanswered_for_10_seconds_ends_the_connection(
    supervise: Start,
) -> None:
    supervised = await supervise(QUIET_SERVER)
    clock = ManualClock()
    connection = await ForgeConnection.open(
        supervised.url, clock=clock, timing=ProbeTiming(quiet_s=15, deadline_s=10)
    )
    os.kill(supervised.process.pid, signal.SIGSTOP)
    try:
        await beats(clock, 15)
        assert connection.probe_outstanding
        await beats(clock, 9)
        assert connection.lost is None
        await beats(clock, 1)
        with pytest.raises(ConnectionLost, match="no answer to a ping within 10 s"):
            await connection.next_event()
    finally:
        os.kill(supervised.process.pid, signal.SIGCONT)
        await connection.close()


async def test_a_started_seat_reaches_a_home_holder_as_seat_changed(
    supervise: Start, project_toml: str
) -> None:
    supervised = await supervise(project_toml)
    async with connect(supervised.url) as connection:
        await connection.subscribe(HOME)
        await connection.send(DrillStartSeat(seat=SEAT))
        events = []
        while not any(isinstance(e, OtherFrame) and e.kind == "drill_done" for e in events):
            events.append(await connection.next_event())
        seat_changed = [e for e in events if isinstance(e, Update)]
        assert [e.variant for e in seat_changed] == ["seat_changed"]
        assert not any(isinstance(e, Snapshot) for e in events)


async def test_a_supervisor_that_accepts_but_never_answers_times_out_on_the_clock(
    supervise: Start,
) -> None:
    supervised = await supervise()
    clock = ManualClock()
    os.kill(supervised.process.pid, signal.SIGSTOP)
    try:
        opening = asyncio.ensure_future(
            ForgeConnection.open(supervised.url, clock=clock, open_timeout=10)
        )
        await parked(clock)
        clock.advance(9.9)
        await asyncio.sleep(0)
        assert not opening.done()
        clock.advance(0.1)
        with pytest.raises(SupervisorUnreachable, match="no answer within 10 s"):
            await opening
    finally:
        os.kill(supervised.process.pid, signal.SIGCONT)


async def test_a_wake_probes_at_once_and_any_answer_clears_it(supervise: Start) -> None:
    supervised = await supervise(QUIET_SERVER)
    clock = ManualClock()
    async with connect(supervised.url, clock=clock) as connection:
        await connection.probe_now()
        assert connection.probe_outstanding
        await connection.probe_now()
        await beats(clock, 9)
        assert connection.lost is None
        await connection.subscribe(HOME)
        await beats(clock, 1)
        assert not connection.probe_outstanding
