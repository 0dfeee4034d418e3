"""`forge say` and `forge dictate bench` when the supervisor goes away mid-call or refuses: one
line naming what happened and exit 1, never a traceback."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection, serve

from .conftest import forge

GREETING = {
    "kind": "greeting",
    "version": 1,
    "forge_version": "0.0.0",
    "forge_version_short": "0.0.0",
    "settings": {},
}
SETTINGS = {"kind": "settings", "document": {}}

Answer = Callable[[ServerConnection, dict[str, object]], object]


async def going_away(ws: ServerConnection, request: dict[str, object]) -> None:
    """What a supervisor stopped mid-call does: close every connection (1001, going away)."""
    del request
    await ws.close(1001, "going away")


async def dropped(ws: ServerConnection, request: dict[str, object]) -> None:
    """A supervisor killed mid-call: the TCP connection ends with no close frame."""
    del request
    ws.transport.abort()


async def refused(ws: ServerConnection, request: dict[str, object]) -> None:
    why = "a bench is already running"
    await ws.send(json.dumps({"kind": "error", "what": request["kind"], "why": why}))
    await ws.wait_closed()


@pytest.fixture
async def listening() -> AsyncIterator[Callable[[Answer], str]]:
    """`url = listening(answer)`: a socket that greets like a supervisor, reads the verb the
    client sends, and answers it with `answer`."""
    answers: list[Answer] = []

    async def handler(ws: ServerConnection) -> None:
        await ws.send(json.dumps(GREETING))
        await ws.send(json.dumps(SETTINGS))
        request = json.loads(await ws.recv())
        await answers[0](ws, request)

    async with serve(
        handler, "127.0.0.1", 0, select_subprotocol=lambda _, offered: offered[0]
    ) as server:
        port = next(iter(server.sockets)).getsockname()[1]

        def at(answer: Answer) -> str:
            answers.append(answer)
            return f"ws://127.0.0.1:{port}/socket"

        yield at


VERBS = {
    "say": ("say", "acme/proj/a", "The build is green."),
    "dictate bench": ("dictate", "bench"),
}


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (going_away, "closed by the server (code 1001: going away)"),
        (dropped, "the connection dropped"),
    ],
)
async def test_a_supervisor_gone_mid_call_is_one_line_and_exit_1(
    forge_dirs: dict[str, Path],
    listening: Callable[[Answer], str],
    verb: str,
    answer: Answer,
    reason: str,
) -> None:
    del forge_dirs
    code, out, err = await forge(*VERBS[verb], "--url", listening(answer))
    assert (code, out) == (1, ""), err
    assert (
        err
        == f"forge {verb}: the connection to the supervisor closed before it answered: {reason}\n"
    )


@pytest.mark.parametrize("verb", VERBS)
async def test_a_refusal_is_one_line_and_exit_1(
    forge_dirs: dict[str, Path], listening: Callable[[Answer], str], verb: str
) -> None:
    del forge_dirs
    code, out, err = await forge(*VERBS[verb], "--url", listening(refused))
    assert (code, out) == (1, "")
    assert err == f"forge {verb}: the supervisor refused it: a bench is already running\n"
