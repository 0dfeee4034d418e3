"""A real supervisor on a real socket, in this process, with the services of a seat's files.

It composes what `running_supervisor` composes for forge.toml, documents and git (settings,
documents, the git watch and its tree worker, a config watcher whose check a save runs, the
`workers` rows on home) without the other workers, so a test can also spy on this process's
functions. Clients are websockets clients.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect

from forge.client.auth import subprotocols
from forge.clock import SYSTEM_CLOCK, Clock
from forge.config import ConfigWatcher, load_config
from forge.ipc.manager import WorkerManager
from forge.supervisor import settings
from forge.supervisor.app import publish_workers
from forge.supervisor.seatfiles import gitwatch
from forge.supervisor.seatfiles import service as seatfiles
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.server import SocketServer
from forge.wire.seats import Seat

SEAT = Seat("acme", "proj", "lead")
WIRE_SEAT = {"org": "acme", "project": "proj", "label": "lead"}
FRAME_S = 30.0
"""How long a test waits for a frame it expects (a loaded machine answers late, never never)."""


@dataclass
class Rig:
    supervisor: Supervisor
    config: Path
    tree: Path
    watch: gitwatch.GitWatch
    manager: WorkerManager
    clients: list[ClientConnection] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.supervisor.loaded.config.server.port}/socket"

    async def client(self) -> tuple[ClientConnection, dict[str, Any]]:
        """A connected client and the settings document its second frame carried."""
        client = await connect(self.url, max_size=None, subprotocols=subprotocols())
        self.clients.append(client)
        assert json.loads(await client.recv())["kind"] == "greeting"
        frame = json.loads(await client.recv())
        assert frame["kind"] == "settings"
        return client, frame["document"]


async def next_kind(client: ClientConnection, kind: str) -> dict[str, Any]:
    """The next frame of `kind`, skipping others."""
    async with asyncio.timeout(FRAME_S):
        while True:
            frame: dict[str, Any] = json.loads(await client.recv())
            if frame["kind"] == kind:
                return frame


async def send(client: ClientConnection, message: dict[str, Any]) -> None:
    await client.send(json.dumps(message))


def run(tree: Path, *args: str) -> str:
    """A git command in `tree` (the test's own hands on the repository)."""
    done = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


def make_repo(tree: Path) -> None:
    tree.mkdir(parents=True, exist_ok=True)
    run(tree, "init", "-q", "-b", "main")
    identify(tree)


def identify(tree: Path) -> None:
    """Commits in `tree` need an author; the machine's own config is not relied on."""
    run(tree, "config", "user.email", "t@example.com")
    run(tree, "config", "user.name", "t")
    run(tree, "config", "commit.gpgsign", "false")


Start = Callable[..., Awaitable[Rig]]


@pytest.fixture
async def tree_rig(
    forge_dirs: dict[str, Path], free_port: int, tmp_path: Path
) -> AsyncIterator[Start]:
    """`await tree_rig(toml="", repo=True, clock=..., linger_s=...)`: forge.toml with project
    acme/proj at tmp/tree (plus `toml`), the seat acme/proj/lead started, served on a free port."""
    stops: list[Callable[[], Awaitable[None]]] = []

    async def start(
        toml: str = "", *, repo: bool = True, clock: Clock = SYSTEM_CLOCK, linger_s: float = 30.0
    ) -> Rig:
        tree = tmp_path / "tree"
        if repo:
            make_repo(tree)
        else:
            tree.mkdir(exist_ok=True)
        config = tmp_path / "forge.toml"
        config.write_text(
            f'[[projects]]\norg = "acme"\nname = "proj"\npath = "{tree}"\n' + toml,
            encoding="utf-8",
        )
        loaded = load_config(config, overrides={"server.port": free_port})
        supervisor = Supervisor(loaded, clock=clock)
        manager = WorkerManager()
        publish_workers(supervisor, manager)
        watcher = ConfigWatcher(config, loaded, supervisor.apply_config)
        settings.install(supervisor, watcher.check)
        watch = seatfiles.install(supervisor, manager, linger_s=linger_s)
        socket = SocketServer(supervisor)
        await socket.start()
        await supervisor.start_seat(SEAT)
        rig = Rig(supervisor, config, tree, watch, manager)

        async def stop() -> None:
            for client in rig.clients:
                await client.close()
            await socket.close()
            await supervisor.shutdown()
            await manager.close()

        stops.append(stop)
        return rig

    yield start
    for stop in stops:
        await stop()
