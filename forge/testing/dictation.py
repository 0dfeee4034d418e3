"""A served supervisor with only dictation and voice installed, for tests and `bench/dictate.py`.

Built in-process as `forge supervise` builds it (its core, the real socket, a worker manager
running the real dictate worker process), with one project `acme/proj` at `project`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from forge.config import load_config
from forge.ipc.manager import WorkerManager
from forge.ipc.policy import LifecycleTimings
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.server import SocketServer
from forge.supervisor.voice import service as dictation

TIMINGS = LifecycleTimings(hello_timeout=60.0, request_timeout=60.0, kill_grace=1.0)
"""Generous on a loaded machine: the model loads beside the handshake, decodes queue."""


@dataclass
class Served:
    supervisor: Supervisor
    service: dictation.VoiceService
    manager: WorkerManager
    url: str


@asynccontextmanager
async def serve_dictation(
    project: Path, config_dir: Path, port: int, *, tts: bool = True
) -> AsyncIterator[Served]:
    """forge.toml with `[dictate]` (and `[tts]` when `tts`) on, the socket on `port`."""
    toml = config_dir / "forge.toml"
    toml.write_text(
        f"[dictate]\nenabled = true\n[tts]\nenabled = {str(tts).lower()}\n"
        f'[[projects]]\norg = "acme"\nname = "proj"\npath = "{project}"\n'
    )
    loaded = load_config(toml, overrides={"server.port": port})
    supervisor = Supervisor(loaded)
    async with WorkerManager(timings=TIMINGS) as manager:
        service = dictation.install(supervisor, manager)
        socket = SocketServer(supervisor)
        await socket.start()
        try:
            yield Served(supervisor, service, manager, f"ws://127.0.0.1:{port}/socket")
        finally:
            await socket.close()
            await supervisor.shutdown()
