"""An in-process socket (the core `Supervisor` and `SocketServer`, no worker services) writing
its records to a forge.log the test reads, in the isolated XDG tree of `forge_dirs`."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from forge.clock import SYSTEM_CLOCK, Clock
from forge.config import load_config
from forge.logs import LOG_FILE_ENV, configure
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.server import SocketServer

RECORD_S = 10.0


@dataclass
class Served:
    supervisor: Supervisor
    server: SocketServer
    host: str
    port: int
    log: Path

    @property
    def scheme(self) -> str:
        return "ws" if self.server.tls is None else "wss"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}/socket"

    def records(self, name: str) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [r for r in map(json.loads, lines) if r.get("record") == name]

    async def record(self, name: str, **match: Any) -> dict[str, Any]:
        """The first record `name` whose fields include `match`, once it is written."""
        async with asyncio.timeout(RECORD_S):
            while True:
                for found in self.records(name):
                    if all(found.get(k) == v for k, v in match.items()):
                        return found
                await asyncio.sleep(0.01)


Serve = Callable[..., Awaitable[Served]]


def port_on(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
async def serve(
    forge_dirs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Serve]:
    """`await serve(toml, host=, clock=)`: a socket on a free port of `host`; closed at the end."""
    monkeypatch.delenv(LOG_FILE_ENV, raising=False)
    log = forge_dirs["state"] / "forge" / "forge.log"
    configure(log, to_stderr=False)
    running: list[Served] = []

    async def start(
        toml: str = "", *, host: str = "127.0.0.1", clock: Clock = SYSTEM_CLOCK
    ) -> Served:
        config = tmp_path / "forge.toml"
        config.write_text(toml, encoding="utf-8")
        port = port_on(host)
        loaded = load_config(config, overrides={"server.bind": host, "server.port": port})
        supervisor = Supervisor(loaded, clock=clock)
        # A hold runs on `clock`; the handshake's bound on the loop's: a loaded machine must not
        # close a connection a manual clock is still holding.
        server = SocketServer(supervisor, open_timeout_s=600.0)
        await server.start()
        served = Served(supervisor, server, host, port, log)
        running.append(served)
        return served

    yield start
    for served in running:
        await served.server.close()
        await served.supervisor.shutdown()
    configure(None, to_stderr=False)
