"""Keepalive, the write bound and the watchdog (T11, T14, T15), with their durations scaled down."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import Close, Opcode

from forge.config import load_config
from forge.testing.raw_client import RawClient
from forge.testing.supervised import Start, ask, quiet

KEEPALIVE = "[server]\nping_interval_s = 0.15\nping_timeout_s = 0.6\n"
BOUNDS = "[server]\nwrite_timeout_s = 0.5\nwatchdog_s = 2.0\n"
PING_PACE_S = 0.1
"""How often the stuck client of the watchdog test pings (its client-side keepalive, scaled)."""


def test_the_production_durations(tmp_path: Path) -> None:
    """O-T1, O-T7: 127.0.0.1:8790 and the seed's 15/60/60/240 s; tests scale them by config."""
    server = load_config(tmp_path / "absent.toml").config.server
    assert (server.bind, server.port) == ("127.0.0.1", 8790)
    assert (server.ping_interval_s, server.ping_timeout_s) == (15, 60)
    assert (server.write_timeout_s, server.watchdog_s) == (60, 240)


async def test_a_peer_that_never_pongs_is_closed(supervise: Start) -> None:
    supervised = await supervise(KEEPALIVE)
    async with RawClient(answer_pings=False) as silent:
        await silent.open(supervised.port)
        pings = 0
        while (frame := await silent.next_frame()).opcode is not Opcode.CLOSE:
            pings += frame.opcode is Opcode.PING
        assert pings >= 1
        assert Close.parse(frame.data).code == 1011
        await silent.read_to_eof()


async def test_a_peer_that_pongs_survives_ten_intervals(supervise: Start) -> None:
    supervised = await supervise(KEEPALIVE)
    async with RawClient(answer_pings=True) as answering:
        await answering.open(supervised.port)
        pings = 0
        while pings < 10:
            frame = await answering.next_frame()
            assert frame.opcode is not Opcode.CLOSE
            pings += frame.opcode is Opcode.PING
        answering.send_json({"kind": "ping"})
        while (message := await answering.next_json())["kind"] != "pong":
            assert message["kind"] in {"greeting", "settings"}


async def test_a_peer_that_stops_reading_mid_frame_is_aborted(supervise: Start) -> None:
    supervised = await supervise(BOUNDS)
    async with RawClient() as stalled:
        await stalled.open(supervised.port, receive_buffer=4096)
        assert (await stalled.next_json())["kind"] == "greeting"
        assert (await stalled.next_json())["kind"] == "settings"
        stalled.send_json({"kind": "drill_blob", "size": 4 * 1024 * 1024})
        record = await supervised.record("socket_write_timeout")
        assert record["bound_s"] == 0.5
        closed = await supervised.record("socket_closed", reason="write_timeout")
        assert closed["peer"] == record["peer"]
        received = await stalled.read_to_eof()
        assert len(received) < 4 * 1024 * 1024


async def keep_pinging(client: ClientConnection) -> None:
    """Ping until the connection ends: its pongs keep coming, and do not count as progress."""
    while True:
        await quiet(client)
        await asyncio.sleep(PING_PACE_S)


async def test_the_watchdog_ends_a_stalled_connection_and_spares_others(supervise: Start) -> None:
    supervised = await supervise(BOUNDS)
    idle = await supervised.greeted()
    slow = await supervised.greeted()
    assert await ask(slow, {"kind": "drill_stall", "seconds": 1.5}) == {"kind": "drill_done"}
    stuck = await supervised.greeted()
    await stuck.send(json.dumps({"kind": "drill_stall", "seconds": 30}))
    with pytest.raises(ConnectionClosed):
        await keep_pinging(stuck)
    record = await supervised.record("socket_closed", reason="watchdog")
    assert record["peer"] == (await supervised.record("socket_watchdog"))["peer"]
    await quiet(idle)
    await quiet(slow)


async def test_ping_is_answered_while_a_handler_waits(supervise: Start) -> None:
    """T12: a handler that waits (here a stall) never delays the pong behind it."""
    supervised = await supervise()
    client = await supervised.greeted()
    await client.send(json.dumps({"kind": "drill_stall", "seconds": 60}))
    await quiet(client)
