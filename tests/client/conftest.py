"""Real supervisors for the client: `supervise` (a `forge supervise` subprocess, shared with the
supervisor's suite) and `in_process` (the same Supervisor and SocketServer in the test's loop, for
tests that hand it a real WorkerManager's rows)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from forge.config import load_config
from forge.ipc.manager import WorkerManager
from forge.supervisor import terminals
from forge.supervisor.core import Supervisor
from forge.supervisor.server import SocketServer
from tests.supervisor.conftest import supervise

__all__ = ["supervise"]

PROJECT_TOML = """
[[projects]]
org = "acme"
name = "proj"
path = "{path}"
"""

InProcess = Callable[[], Awaitable[Supervisor]]
TERMINAL_PROJECT_TOML = PROJECT_TOML + 'shell = "/bin/sh"\n'
"""A project whose seats' shells are /bin/sh: a plain prompt the tests can read."""


@pytest.fixture
def project_toml(tmp_path: Path) -> str:
    project = tmp_path / "proj"
    project.mkdir()
    return TERMINAL_PROJECT_TOML.format(path=project)


@pytest.fixture
async def with_terminals(
    in_process: InProcess, tmp_path: Path, forge_dirs: dict[str, Path]
) -> AsyncIterator[Supervisor]:
    """An in-process supervisor serving the terminal verbs with real terminal host workers."""
    supervisor = await in_process()
    async with WorkerManager() as manager:
        terminals.install(supervisor, manager)
        supervisor.workers = lambda: [row.to_json() for row in manager.rows()]
        yield supervisor


@pytest.fixture
async def in_process(
    forge_dirs: dict[str, Path], free_port: int, tmp_path: Path, project_toml: str
) -> AsyncIterator[InProcess]:
    servers: list[tuple[Supervisor, SocketServer]] = []

    async def start() -> Supervisor:
        config = tmp_path / "forge.toml"
        config.write_text(project_toml, encoding="utf-8")
        supervisor = Supervisor(load_config(config, overrides={"server.port": free_port}))
        server = SocketServer(supervisor)
        await server.start()
        servers.append((supervisor, server))
        return supervisor

    yield start
    for supervisor, server in servers:
        await server.close()
        await supervisor.shutdown()
