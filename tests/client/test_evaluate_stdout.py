"""`forge evaluate`'s stdout is its own output: the client's log records go to forge.log, never
ahead of the preview (issue 36 item 4: `[debug ] client_connected ...` was its first line)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection, serve

from forge.wire import server
from tests.lab.kit import Kit


async def greeting_supervisor(ws: ServerConnection) -> None:
    """Frames 1 and 2, as a supervisor greets; the preview asks nothing more."""
    await ws.send(
        server.JsonFrame.encode(
            server.Greeting(forge_version="1", forge_version_short="1", settings={})
        ).text.decode()
    )
    await ws.send(
        server.JsonFrame.encode(
            server.Settings(document={"source": None, "areas": []})
        ).text.decode()
    )
    async for _ in ws:
        pass


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async with serve(greeting_supervisor, "127.0.0.1", 0, subprotocols=["forge.v1"]) as listening:
        yield f"ws://127.0.0.1:{listening.sockets[0].getsockname()[1]}/socket"


async def test_the_preview_is_the_first_thing_on_stdout(
    tmp_path: Path, forge_dirs: dict[str, Path], url: str
) -> None:
    del forge_dirs
    kit = Kit(tmp_path)
    kit.cohort(a=kit.formula("a"), b=kit.formula("b"), tasks={"t1": kit.plan("t1")})
    preview = await asyncio.to_thread(kit.cli, "--url", url)
    assert preview.returncode == 0, preview.stderr
    assert f"Runs in: the forge supervisor at {url}" in preview.stdout
    assert "client_connected" not in preview.stdout + preview.stderr
    assert not preview.stdout.startswith("[")
