"""kill -9 of the dictate worker mid-take: the take's connection is told it failed, the manager
restarts the worker, and the next take lands its words."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from forge.ipc.manager import WorkerState
from forge.workers.dictate.corpus import Clip

from .conftest import free_port, ready
from .harness import SEAT, Client, Served, eventually, serve_dictation

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(600)]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def own(module_dirs: Path) -> AsyncIterator[Served]:
    project = module_dirs / "proj"
    project.mkdir()
    async with serve_dictation(project, module_dirs / "config", free_port(), tts=False) as running:
        yield await ready(running)


async def test_kill_9_mid_take_fails_the_take_and_the_next_take_works(
    own: Served, clips: dict[str, Clip]
) -> None:
    handle = own.service.handle
    assert handle is not None
    assert handle.pid is not None
    first_pid = handle.pid
    phone = await Client.open(own.url)
    await phone.send({"kind": "dictate_stream", "key": SEAT, "surface": "review"})
    pcm = clips["flite-1"].samples()
    await phone.stream(pcm[: len(pcm) // 2], pace=None)
    await phone.next_of_kind("dictate_level")
    os.kill(first_pid, signal.SIGKILL)
    failed = await phone.next_of_kind("dictate_failed", "dictate_ended")
    assert failed["kind"] == "dictate_failed", failed
    assert failed["surface"] == "review"
    assert "worker stopped mid-take" in failed["why"]
    await eventually(lambda: handle.state is WorkerState.READY and handle.pid != first_pid)
    await ready(own)
    ended = await phone.take(clips["flite-3"].samples(), pace=None)
    assert ended["kind"] == "dictate_ended", ended
    assert ended["text"] == clips["flite-3"].text
    assert handle.row.restarts == 1
    await phone.close()
