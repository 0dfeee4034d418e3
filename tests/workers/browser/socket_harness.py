"""Browser verbs over a real socket: a supervisor in this process, clients that record."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from websockets.asyncio.client import ClientConnection, connect

from forge.client.auth import subprotocols
from forge.config import load_config
from forge.ipc.manager import WorkerManager
from forge.logs import LOG_FILE_ENV, configure
from forge.supervisor.browser import service as browsers
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.server import SocketServer

from .harness import Recorder

SEAT = {"org": "acme", "project": "proj", "label": "lead"}


class Client(Recorder):
    """One socket: every JSON message and every kind-1 frame it received, awaitable."""

    def __init__(self, ws: ClientConnection) -> None:
        super().__init__()
        self.ws = ws
        self.messages: list[dict[str, Any]] = []
        self._reader = asyncio.ensure_future(self._read())
        self._asks = 0

    async def _read(self) -> None:
        async for message in self.ws:
            if isinstance(message, str):
                self.messages.append(json.loads(message))
                self._changed.set()
            else:
                self.frame(message)

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["kind"] == kind]

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))

    async def ask(self, message: dict[str, Any]) -> Any:
        self._asks += 1
        reply_to = f"r{self._asks}"
        await self.send({**message, "reply_to": reply_to})
        reply = await self.until(
            lambda: next((m for m in self.kinds("reply") if m["reply_to"] == reply_to), None)
        )
        return reply["body"]

    async def error(self, what: str) -> dict[str, Any]:
        return await self.until(
            lambda: next((m for m in self.kinds("error") if m["what"] == what), None)
        )

    async def close(self) -> None:
        await self.ws.close()
        self._reader.cancel()


@contextlib.asynccontextmanager
async def serving(
    root: Path, extra_toml: str = "", *, services: list[browsers.BrowserService] | None = None
) -> AsyncIterator[tuple[str, Path]]:
    """A supervisor serving the browser verbs on a free port; yields its URL and its log (and
    puts its browser service in `services`, for a test that looks inside)."""
    project = root / "proj"
    project.mkdir()
    toml = root / "forge.toml"
    toml.write_text(f'[[projects]]\norg = "acme"\nname = "proj"\npath = "{project}"\n{extra_toml}')
    log = root / "forge.log"
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(LOG_FILE_ENV, raising=False)  # restored after: workers of later tests
        configure(log, to_stderr=False)
        patch.setenv("XDG_STATE_HOME", str(root / "state"))
        patch.setenv("XDG_RUNTIME_DIR", str(root / "run"))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        loaded = load_config(toml, overrides={"server.port": port})
        supervisor = Supervisor(loaded)
        async with WorkerManager(runtime_dir=root / "run") as manager:
            service = browsers.install(supervisor, manager)
            if services is not None:
                services.append(service)
            server = SocketServer(supervisor)
            await server.start()
            yield f"ws://127.0.0.1:{port}/socket", log
            await server.close()
            await supervisor.shutdown()
    configure(None, to_stderr=False)


def browser_host() -> psutil.Process:
    """The one browser host worker this process supervises now."""
    (host,) = [
        p for p in psutil.Process().children() if "forge.workers.browser" in " ".join(p.cmdline())
    ]
    return host


async def client(served: tuple[str, Path], query: str = "") -> Client:
    ws = await connect(served[0] + query, max_size=None, subprotocols=subprotocols())
    return Client(ws)


def records(served: tuple[str, Path], name: str) -> list[dict[str, Any]]:
    lines = served[1].read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("record") == name]
