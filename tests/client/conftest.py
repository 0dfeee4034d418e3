"""Real supervisors for the client: `supervise` (a `forge supervise` subprocess, shared with the
supervisor's suite) and `in_process` (the same Supervisor and SocketServer in the test's loop,
composed by `running_supervisor` exactly as `forge supervise` composes it: for tests that stop and
restart a supervisor, or hand it their own WorkerManager)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from forge.config import load_config
from forge.ipc.manager import WorkerManager
from forge.supervisor.app import running_supervisor
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.server import SocketServer

PROJECT_TOML = """
[[projects]]
org = "acme"
name = "proj"
path = "{path}"
"""

TERMINAL_PROJECT_TOML = PROJECT_TOML + 'shell = "/bin/sh"\n'
"""A project whose seats' shells are /bin/sh: a plain prompt the tests can read."""


@pytest.fixture
def project_toml(tmp_path: Path) -> str:
    project = tmp_path / "proj"
    project.mkdir()
    return TERMINAL_PROJECT_TOML.format(path=project)


class InProcess:
    """In-process supervisors on one port, composed as `forge supervise` composes them
    (`running_supervisor`: terminals, browsers, process walks, home `workers`). `start` one,
    optionally on a test's own WorkerManager, `stop` it, and start another, as a restart would."""

    def __init__(self, config: Path, port: int) -> None:
        self._config = config
        self._port = port
        self._running: dict[Supervisor, contextlib.AsyncExitStack] = {}

    async def start(self, manager: WorkerManager | None = None) -> Supervisor:
        loaded = load_config(self._config, overrides={"server.port": self._port})
        stack = contextlib.AsyncExitStack()
        supervisor = await stack.enter_async_context(running_supervisor(loaded, manager))
        server = SocketServer(supervisor)
        await server.start()
        stack.push_async_callback(server.close)
        self._running[supervisor] = stack
        return supervisor

    async def stop(self, supervisor: Supervisor) -> None:
        await self._running.pop(supervisor).aclose()

    async def stop_all(self) -> None:
        for supervisor in list(self._running):
            await self.stop(supervisor)


@pytest.fixture
async def in_process(
    forge_dirs: dict[str, Path], free_port: int, tmp_path: Path, project_toml: str
) -> AsyncIterator[InProcess]:
    config = tmp_path / "forge.toml"
    config.write_text(project_toml, encoding="utf-8")
    servers = InProcess(config, free_port)
    yield servers
    await servers.stop_all()


@pytest.fixture
async def with_terminals(in_process: InProcess) -> Supervisor:
    """An in-process supervisor serving the terminal verbs with real terminal host workers."""
    return await in_process.start()


async def forge(*args: str) -> tuple[int, str, str]:
    """Run `forge ARGS...` as a person does; its exit code, stdout and stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "forge.cli", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()
