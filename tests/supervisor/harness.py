"""Driving a real `forge supervise`: its log as events, websockets clients, small asks."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.protocol import State

from forge.client.auth import subprotocols

STARTUP_S = 20.0
"""How long a supervisor may take to listen on a loaded machine."""

POLL_S = 0.02


@dataclass
class Supervised:
    """One running supervisor: where it listens, its log, and its config file."""

    process: asyncio.subprocess.Process
    port: int
    config: Path
    log: Path
    since: int = 0
    """Where this run's records begin in the log (another run may have written before it)."""
    stderr: bytes = b""
    clients: list[ClientConnection] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/socket"

    def records(self, name: str) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        with self.log.open("rb") as log:
            log.seek(self.since)
            lines = log.read().decode("utf-8").splitlines()
        return [r for r in map(json.loads, lines) if r.get("record") == name]

    async def record(self, name: str, **match: Any) -> dict[str, Any]:
        """Wait for a record named `name` whose fields include `match` (the log is the event)."""
        async with asyncio.timeout(STARTUP_S):
            while True:
                for found in self.records(name):
                    if all(found.get(k) == v for k, v in match.items()):
                        return found
                if self.process.returncode is not None:
                    raise AssertionError(f"supervisor exited {self.process.returncode}")
                await asyncio.sleep(POLL_S)

    async def connect(self, query: str = "", **kwargs: Any) -> ClientConnection:
        """A websockets client; greeting and settings are read off and checked by `greeted`."""
        kwargs.setdefault("subprotocols", subprotocols())
        client = await connect(self.url + query, max_size=None, **kwargs)
        self.clients.append(client)
        return client

    async def greeted(self, query: str = "", **kwargs: Any) -> ClientConnection:
        client = await self.connect(query, **kwargs)
        assert json.loads(await client.recv())["kind"] == "greeting"
        assert json.loads(await client.recv())["kind"] == "settings"
        return client

    async def stop(self) -> int:
        for client in self.clients:
            if client.state is State.OPEN:
                await client.close()
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        _, self.stderr = await self.process.communicate()
        assert self.process.returncode is not None
        return self.process.returncode


Start = Callable[..., Awaitable[Supervised]]


async def frames_until(client: ClientConnection, kind: str) -> list[dict[str, Any]]:
    """Read JSON frames up to and including the first of `kind`."""
    seen: list[dict[str, Any]] = []
    while True:
        message = await client.recv()
        assert isinstance(message, str), message[:40]
        seen.append(json.loads(message))
        if seen[-1]["kind"] == kind:
            return seen


async def ask(client: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    """Send one message and return the next JSON frame."""
    await client.send(json.dumps(message))
    answer = await client.recv()
    assert isinstance(answer, str)
    decoded: dict[str, Any] = json.loads(answer)
    return decoded


async def quiet(client: ClientConnection) -> None:
    """Prove no frame is pending: a ping's pong is the very next frame."""
    assert await ask(client, {"kind": "ping"}) == {"kind": "pong"}
