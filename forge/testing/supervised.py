"""Driving a real `forge supervise` process: its log as events, websockets clients, small asks.

For tests of anything a client sees over `/socket`. The `supervise` fixture (tests/conftest.py)
wraps `Supervisors`; a test asks it for a supervisor with its own forge.toml, then talks to it:

    async def test_ping(supervise: Start) -> None:
        supervised = await supervise('[server]\nping_interval_s = 0.5\n')
        client = await supervised.greeted()           # greeting and settings read off
        assert await ask(client, {"kind": "ping"}) == {"kind": "pong"}
        await supervised.record("socket_listening")   # wait for a log record: the log is the event

The supervisor runs with the drill verbs on (`forge.supervisor.socket.drills`) unless
`drills=False`.
It logs to `$XDG_STATE_HOME/forge/forge.log`, so the fixture `forge_dirs` must isolate XDG first.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.protocol import State

from forge import paths
from forge.client.auth import subprotocols
from forge.testhooks import SUPERVISOR_DRILLS

STARTUP_S = 60.0
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

    async def record(self, name: str, nth: int = 0, **match: Any) -> dict[str, Any]:
        """Wait for the `nth` (from 0) record named `name` whose fields include `match` (the
        log is the event)."""
        async with asyncio.timeout(STARTUP_S):
            while True:
                found = [
                    record
                    for record in self.records(name)
                    if all(record.get(k) == v for k, v in match.items())
                ]
                if len(found) > nth:
                    return found[nth]
                if self.process.returncode is not None:
                    raise AssertionError(f"supervisor exited {self.process.returncode}")
                await asyncio.sleep(POLL_S)

    async def connect(self, query: str = "", **kwargs: Any) -> ClientConnection:
        """A websockets client; greeting and settings are read off and checked by `greeted`."""
        kwargs.setdefault("subprotocols", subprotocols())
        # A client whose test stopped reading cannot see the server's close frame behind what it
        # left unread: its close gives up after 1 s instead of websockets' 10.
        kwargs.setdefault("close_timeout", 1)
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
"""What the `supervise` fixture yields: `Supervisors.start`."""


class Supervisors:
    """Starts `forge supervise` processes on one port and one config file; `stop_all` ends them."""

    def __init__(self, config: Path, port: int) -> None:
        self.config = config
        self.port = port
        self.started: list[Supervised] = []

    async def start(
        self,
        toml: str = "",
        *,
        drills: bool = True,
        args: tuple[str, ...] = (),
        log_level: str | None = "debug",
    ) -> Supervised:
        """Write `toml` as the config, start a supervisor on it and wait until it listens.

        It logs every level by default, because tests read debug records; `log_level=None`
        leaves forge.toml's `[log] level` in force."""
        self.config.write_text(toml, encoding="utf-8")
        if log_level is not None:
            args = ("--log-level", log_level, *args)
        log = paths.log_file()
        since = log.stat().st_size if log.exists() else 0
        env = SUPERVISOR_DRILLS.set(os.environ, "1" if drills else "0")
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "forge.cli", "supervise", "--config", str(self.config),
            "--port", str(self.port), *args,
            env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        supervised = Supervised(process, self.port, self.config, log, since)
        self.started.append(supervised)
        await supervised.record("socket_listening")
        return supervised

    async def stop_all(self) -> None:
        for supervised in self.started:
            await supervised.stop()


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
