"""A supervisor that greets but does not speak the Lab (a build from before `lab_start`): the
approved run is not handed over, not run here either, and the CLI says why and exits 1 once
`HANDOVER_S` has passed, instead of waiting forever."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from websockets.asyncio.server import ServerConnection, serve

from forge.cli import build_parser
from forge.client import evaluate as client_evaluate
from forge.wire import server

from .kit import Kit


async def old_supervisor(ws: ServerConnection) -> None:
    """Frames 1 and 2, then every message refused as an unknown kind, never naming it."""
    greeting = server.Greeting(forge_version="0.old", forge_version_short="0.old", settings={})
    await ws.send(server.JsonFrame.encode(greeting).text.decode())
    await ws.send(
        server.JsonFrame.encode(
            server.Settings(document={"source": None, "areas": []})
        ).text.decode()
    )
    async for text in ws:
        kind = json.loads(text)["kind"]
        await ws.send(
            server.JsonFrame.encode(
                server.Error(what="client_message", why=f"unknown kind `{kind}`")
            ).text.decode()
        )


@pytest.fixture
async def old_url() -> AsyncIterator[str]:
    async with serve(old_supervisor, "127.0.0.1", 0, subprotocols=["forge.v1"]) as listening:
        port = listening.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}/socket"


async def test_a_supervisor_that_never_takes_the_run_is_given_up_on(
    kit: Kit, old_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kit.cohort(a=kit.formula("a"), b=kit.formula("b"), tasks={"t1": kit.plan("t1")})
    digest = kit.digest()
    for name, value in kit.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(client_evaluate, "HANDOVER_S", 0.5)
    args = build_parser().parse_args([*kit.argv("--approve", digest)[3:], "--url", old_url])

    code = await client_evaluate.evaluate(args, old_url, None)

    stderr = capsys.readouterr().err
    assert code == 1, stderr
    assert (
        f"forge: the forge supervisor at {old_url} did not answer lab_start within 0.5 s: "
        "a build from before the Lab on the socket?"
    ) in stderr
    assert "add --local to run it in this process" in stderr
    assert not (kit.out / "attempts").exists()
