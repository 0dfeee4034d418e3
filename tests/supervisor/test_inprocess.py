"""The supervisor's API as a host sees it, in-process over a real socket: seats, holding, hooks."""

from __future__ import annotations

import asyncio
import json

from websockets.asyncio.client import connect

from forge.client.auth import subprotocols
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.core import Supervisor
from forge.testing.supervised import ask, quiet
from forge.wire.binary import TerminalInput, terminal_input
from forge.wire.client import TerminalDetach
from forge.wire.seats import Seat
from forge.wire.server import ServerMessage

SEAT = Seat("acme", "proj", "lead")
WIRE_SEAT = {"org": "acme", "project": "proj", "label": "lead"}


def dial(supervisor: Supervisor) -> connect:
    return connect(url(supervisor), subprotocols=subprotocols())


def url(supervisor: Supervisor) -> str:
    return f"ws://127.0.0.1:{supervisor.loaded.config.server.port}/socket"


async def test_a_seat_is_held_while_its_session_is_subscribed(served: Supervisor) -> None:
    await served.start_seat(SEAT)
    async with dial(served) as client:
        await client.recv(), await client.recv()
        assert not served.is_held(SEAT)
        await ask(client, {"kind": "subscribe", "what": {"session": WIRE_SEAT}})
        assert served.is_held(SEAT)
        await client.send(json.dumps({"kind": "unsubscribe", "what": {"session": WIRE_SEAT}}))
        await quiet(client)
        assert not served.is_held(SEAT)


class Detached(ServerMessage, frozen=True, kw_only=True, tag="detached"):
    """A test verb's answer (a handler sends only a ServerMessage)."""


async def test_a_registered_verb_and_the_teardown_hook_see_the_same_connection(
    served: Supervisor,
) -> None:
    seen: list[tuple[str, int]] = []
    torn_down = asyncio.Event()

    async def detach(connection: Connection, message: TerminalDetach) -> None:
        seen.append(("verb", connection.id))
        connection.send(Detached())

    def teardown(connection: Connection) -> None:
        seen.append(("teardown", connection.id))
        torn_down.set()

    served.register_verb(TerminalDetach, detach)
    served.on_disconnect(teardown)
    async with dial(served) as client:
        await client.recv(), await client.recv()
        assert await ask(client, {"kind": "terminal_detach"}) == {"kind": "detached"}
    await torn_down.wait()
    (verb, first), (hook, second) = seen
    assert (verb, hook) == ("verb", "teardown")
    assert first == second
    assert not served.connections


async def test_a_keystroke_is_served_on_the_read_path_and_never_overtakes_a_waiting_verb(
    served: Supervisor,
) -> None:
    """Terminal input skips the dispatcher's task switch only while nothing of its connection
    waits there: a keystroke sent behind a verb still being handled (a control take) comes
    after it."""
    release = asyncio.Event()
    handling = asyncio.Event()
    served_in: list[tuple[str, str]] = []
    behind_served = asyncio.Event()

    async def detach(connection: Connection, message: TerminalDetach) -> None:
        handling.set()
        await release.wait()
        served_in.append(("verb", _task_role()))

    def typed(connection: Connection, frame: TerminalInput) -> None:
        served_in.append((frame.data.decode(), _task_role()))
        if frame.data == b"c":
            behind_served.set()

    served.register_verb(TerminalDetach, detach)
    served.register_binary_now(TerminalInput, typed)
    async with dial(served) as client:
        await client.recv(), await client.recv()
        await client.send(terminal_input(terminal=1, data=b"a"))
        await client.send(json.dumps({"kind": "terminal_detach"}))
        await handling.wait()
        await client.send(terminal_input(terminal=1, data=b"b"))
        await client.send(terminal_input(terminal=1, data=b"c"))
        await quiet(client)  # the reader answers a ping in order: it took both keystrokes
        assert served_in == [("a", "read")]
        release.set()
        await behind_served.wait()
        await client.send(terminal_input(terminal=1, data=b"d"))
        await quiet(client)
    assert served_in == [
        ("a", "read"), ("verb", "dispatch"), ("b", "dispatch"), ("c", "dispatch"), ("d", "read"),
    ]  # fmt: skip


def _task_role() -> str:
    """`read` or `dispatch`: which of the connection's tasks runs the caller."""
    task = asyncio.current_task()
    assert task is not None
    return task.get_name().rpartition("-")[2]
