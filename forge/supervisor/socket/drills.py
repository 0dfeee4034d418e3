"""Drill verbs for tests and benchmarks: loaded only with the test hook
`forge.testhooks.SUPERVISOR_DRILLS` (`FORGE_SUPERVISOR_DRILLS=1`).

They reach what no wave-1 client verb can (start a seat before the terminal host exists, mark a
seat unseen, stall a handler, emit a bulk stream) through the same registration API the hosts
use, so a drill exercises the production paths. A production run never decodes these kinds:
the decoder learns them only when `install` registers them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.core import Supervisor
from forge.wire.binary import terminal_output
from forge.wire.client import ClientMessage
from forge.wire.seats import Seat
from forge.wire.server import ServerMessage

STREAM_HIGH_WATER = 512 * 1024
"""Past this many unsent bytes a drill stream waits for the listener to drain to half of it."""


class DrillStartSeat(ClientMessage, frozen=True, tag="drill_start_seat"):
    seat: Seat


class DrillSeatUpdate(ClientMessage, frozen=True, tag="drill_seat_update"):
    seat: Seat
    variant: str
    body: dict[str, Any] = msgspec.field(default_factory=dict)
    home: bool = False


class DrillUnseen(ClientMessage, frozen=True, tag="drill_unseen"):
    seat: Seat


class DrillFatal(ClientMessage, frozen=True, tag="drill_fatal"):
    message: str


class DrillStall(ClientMessage, frozen=True, tag="drill_stall"):
    """Hold the reader for `seconds` without writing, then answer `drill_done`."""

    seconds: float


class DrillBlob(ClientMessage, frozen=True, tag="drill_blob"):
    """Send one binary frame of `size` bytes (a control frame: never dropped)."""

    size: int


class DrillListen(ClientMessage, frozen=True, tag="drill_listen"):
    """Join the listeners a `drill_stream` fans out to."""


class DrillStream(ClientMessage, frozen=True, tag="drill_stream"):
    """Send `count` kind-4 frames of `size` payload bytes to every listener, then `drill_done`."""

    count: int
    size: int


class DrillFrames(ClientMessage, frozen=True, tag="drill_frames"):
    """Queue `count` kind-4 frames in one burst under a drop policy: `latest` or `bounded` (the
    terminal limit); a bounded overflow is told as `drill_overflow{seq}`."""

    count: int
    size: int
    policy: str


class DrillDone(ServerMessage, frozen=True, kw_only=True, tag="drill_done"):
    """A drill verb finished. Drill messages are not part of the protocol: they are not in
    `forge.wire.registry`."""


class DrillOverflow(ServerMessage, frozen=True, kw_only=True, tag="drill_overflow"):
    """A bounded drill frame `seq` overflowed its queue."""

    seq: int


DRILL_DONE = DrillDone()


def install(supervisor: Supervisor) -> None:
    """Register every drill verb on `supervisor`."""
    listeners: list[Connection] = []

    async def start_seat(connection: Connection, message: DrillStartSeat) -> None:
        await supervisor.start_seat(message.seat)
        connection.send(DRILL_DONE)

    async def seat_update(connection: Connection, message: DrillSeatUpdate) -> None:
        supervisor.publish_seat_update(
            message.seat, message.variant, message.body, home=message.home
        )

    async def unseen(connection: Connection, message: DrillUnseen) -> None:
        supervisor.mark_unseen(message.seat)

    async def fatal(connection: Connection, message: DrillFatal) -> None:
        supervisor.set_fatal_error(message.message)

    async def stall(connection: Connection, message: DrillStall) -> None:
        await supervisor.clock.sleep(message.seconds)
        connection.send(DRILL_DONE)

    async def blob(connection: Connection, message: DrillBlob) -> None:
        connection.send_binary(bytes(message.size))

    async def listen(connection: Connection, message: DrillListen) -> None:
        listeners.append(connection)
        connection.send(DRILL_DONE)

    async def stream(connection: Connection, message: DrillStream) -> None:
        audience = [c for c in listeners if not c.closed]
        payload = bytes(message.size)
        for seq in range(1, message.count + 1):
            frame = terminal_output(terminal=1, seq=seq, data=payload)
            for listener in audience:
                if listener.pending_bytes > STREAM_HIGH_WATER:
                    await listener.writable(below=STREAM_HIGH_WATER // 2)
                listener.send_binary(frame)
        for listener in audience:
            listener.send(DRILL_DONE)

    async def frames(connection: Connection, message: DrillFrames) -> None:
        payload = bytes(message.size)

        def told(seq: int) -> Callable[[], None]:
            return lambda: connection.send(DrillOverflow(seq=seq))

        for seq in range(1, message.count + 1):
            frame = terminal_output(terminal=1, seq=seq, data=payload)
            if message.policy == "latest":
                connection.send_latest("drill", frame)
            else:
                connection.send_bounded("drill", frame, on_overflow=told(seq))
        connection.send(DRILL_DONE)

    supervisor.on_disconnect(lambda c: listeners.remove(c) if c in listeners else None)
    supervisor.register_verb(DrillStartSeat, start_seat)
    supervisor.register_verb(DrillSeatUpdate, seat_update)
    supervisor.register_verb(DrillUnseen, unseen)
    supervisor.register_verb(DrillFatal, fatal)
    supervisor.register_verb(DrillStall, stall)
    supervisor.register_verb(DrillBlob, blob)
    supervisor.register_verb(DrillListen, listen)
    supervisor.register_verb(DrillStream, stream)
    supervisor.register_verb(DrillFrames, frames)
