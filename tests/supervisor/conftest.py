"""A supervisor listening on a real socket, in the test's own process, for tests that drive the
core and a feature with real clients but no `forge supervise` subprocess."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from forge.config import load_config
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.server import SocketServer


@pytest.fixture
async def served(
    forge_dirs: dict[str, Path], free_port: int, tmp_path: Path
) -> AsyncIterator[Supervisor]:
    """One project, `acme/proj`, at `tmp_path`; the socket on `free_port`."""
    del forge_dirs
    config = tmp_path / "forge.toml"
    config.write_text(f'[[projects]]\norg = "acme"\nname = "proj"\npath = "{tmp_path}"\n')
    supervisor = Supervisor(load_config(config, overrides={"server.port": free_port}))
    socket = SocketServer(supervisor)
    await socket.start()
    yield supervisor
    await socket.close()
    await supervisor.shutdown()
