"""One served supervisor with dictation for a module's socket tests, its model loaded."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from forge.wire.seats import Seat
from forge.workers.dictate import corpus
from forge.workers.dictate.corpus import Clip

from .harness import OTHER, SEAT, Served, serve_dictation


@pytest.fixture(scope="module")
def clips() -> dict[str, Clip]:
    return {clip.name: clip for clip in corpus.load()}


@pytest.fixture(scope="module")
def module_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """XDG directories of the module's own (the bench file, the worker sockets, the log)."""
    root = tmp_path_factory.mktemp("dictate")
    with pytest.MonkeyPatch.context() as patch:
        for name in ("config", "state", "runtime"):
            (root / name).mkdir(mode=0o700)
            patch.setenv(
                f"XDG_{name.upper()}_{'DIR' if name == 'runtime' else 'HOME'}", str(root / name)
            )
        patch.delenv("FORGE_CONFIG", raising=False)
        yield root


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def ready(served: Served) -> Served:
    """The dictation model has loaded (takes then start streaming at once)."""
    async with asyncio.timeout(240):
        while served.service.page.model.state != "ready":
            assert served.service.page.model.state != "failed", served.service.page.model.error
            await asyncio.sleep(0.05)
    return served


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served(module_dirs: Path) -> AsyncIterator[Served]:
    project = module_dirs / "proj"
    project.mkdir()
    async with serve_dictation(project, module_dirs / "config", free_port()) as running:
        for seat in (SEAT, OTHER):  # voice_mode answers only for a started seat
            await running.supervisor.start_seat(Seat(**seat))
        yield await ready(running)
