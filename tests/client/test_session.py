"""Reconnect duties (T17, T21) against real supervisors: redial, re-subscribe, re-send showing."""

from __future__ import annotations

import asyncio

from structlog.testing import capture_logs

from forge.client.connection import connect
from forge.client.frames import OtherFrame, Snapshot
from forge.client.session import ClientSession, Disconnected, Reconnected, Redial, SessionEvent
from forge.supervisor.socket.drills import DrillStartSeat, DrillUnseen
from forge.testing.supervised import Start
from forge.wire.seats import HOME, Seat, session

SEAT = Seat("acme", "proj", "lead")
FAST = Redial(first_s=0.05, most_s=0.2)


async def start_seat_marked_unseen(url: str) -> None:
    """On a fresh supervisor: start the seat and mark it unseen, as a turn ending would."""
    async with connect(url) as helper:
        await helper.send(DrillStartSeat(seat=SEAT))
        while not isinstance(event := await helper.next_event(), OtherFrame):
            pass
        assert event.kind == "drill_done"
        await helper.send(DrillUnseen(seat=SEAT))
        home = await helper.subscribe(HOME)
        assert home["unseen"] == [{"org": "acme", "project": "proj", "label": "lead"}]


async def test_a_restarted_supervisor_gets_everything_asked_again(
    supervise: Start, project_toml: str
) -> None:
    first = await supervise(project_toml)
    await start_seat_marked_unseen(first.url)
    client = ClientSession(first.url, redial=FAST)
    await client.open()
    try:
        old_home = await client.subscribe(HOME)
        await client.subscribe(session(SEAT))
        await client.show(SEAT)
        await first.stop()
        event: SessionEvent = await client.next_event()
        while not isinstance(event, Disconnected):
            event = await client.next_event()
        second = await supervise(project_toml)
        await start_seat_marked_unseen(second.url)
        assert isinstance(await client.next_event(), Reconnected)
        replayed = [await client.next_event() for _ in range(2)]
        assert [e.subject for e in replayed if isinstance(e, Snapshot)] == [HOME, session(SEAT)]
        new_home = replayed[0]
        assert isinstance(new_home, Snapshot)
        assert new_home.data["boot_id"] != old_home["boot_id"]
        # Showing was sent again: it spends the new server's mark, and home holders hear it.
        while True:
            event = await client.next_event()
            if isinstance(event, Snapshot) and event.subject == HOME:
                break
        assert event.data["unseen"] == []
    finally:
        await client.close()


async def test_redial_waits_until_a_supervisor_answers(supervise: Start, project_toml: str) -> None:
    first = await supervise(project_toml)
    client = ClientSession(first.url, redial=FAST)
    await client.open()
    try:
        await client.subscribe(HOME)
        await first.stop()
        assert isinstance(await client.next_event(), Disconnected)
        assert client.showing is None
        with capture_logs() as records:
            reconnecting = asyncio.ensure_future(client.next_event())
            # The log record is the event (as in the supervisor harness): a dial has failed.
            while not any(r["event"] == "client_redial_failed" for r in records):  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            assert not reconnecting.done()
            second = await supervise(project_toml)
            assert isinstance(await reconnecting, Reconnected)
        snapshot = await client.next_event()
        assert isinstance(snapshot, Snapshot)
        assert snapshot.subject == HOME
        assert second.records("socket_opened")
    finally:
        await client.close()
