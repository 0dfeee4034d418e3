"""A served supervisor with dictation and voice, and a client that streams takes at a chosen pace.

The supervisor is built in-process as `forge supervise` builds it (its core, the real socket, a
worker manager running the real dictate worker process), with only the dictation area installed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from forge.config import load_config
from forge.ipc.manager import WorkerManager
from forge.ipc.policy import LifecycleTimings
from forge.supervisor import dictation
from forge.supervisor.core import Supervisor
from forge.supervisor.server import SocketServer
from forge.wire.binary import dictation as kind0
from forge.workers.dictate.audio import FRAME_BYTES, FRAME_MS

SEAT = {"org": "acme", "project": "proj", "label": "a"}
OTHER = {"org": "acme", "project": "proj", "label": "b"}
TIMINGS = LifecycleTimings(hello_timeout=60.0, request_timeout=60.0, kill_grace=1.0)
WAIT_S = 240.0
"""How long a take's end may take on a loaded two-core machine (decodes queue behind others)."""


async def eventually(check: Callable[[], Any], within: float = WAIT_S) -> None:
    """Ask `check` again until it holds: for state no frame announces (a worker's take table)."""
    async with asyncio.timeout(within):
        while not (await check() if asyncio.iscoroutinefunction(check) else check()):
            await asyncio.sleep(0.02)


@dataclass
class Served:
    supervisor: Supervisor
    service: dictation.DictationService
    manager: WorkerManager
    url: str


@asynccontextmanager
async def serve_dictation(
    project: Path, config_dir: Path, port: int, *, tts: bool = True
) -> AsyncIterator[Served]:
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


class Client:
    """One socket client: every JSON frame as it arrives, and ways to wait for them."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.frames: list[dict[str, Any]] = []
        self._arrived = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, url: str) -> Client:
        ws = await connect(url, max_size=None)
        client = cls(ws)
        await client.next_of_kind("settings")
        return client

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))

    async def stream(self, pcm: bytes, *, pace: float | None) -> None:
        """Send `pcm` as kind-0 frames of 20 ms: at `pace` times real time, or unpaced (None)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        for number, at in enumerate(range(0, len(pcm), FRAME_BYTES)):
            await self.ws.send(kind0(pcm[at : at + FRAME_BYTES]))
            if pace is not None:
                due = started + (number + 1) * FRAME_MS / 1000 / pace
                await asyncio.sleep(max(due - loop.time(), 0.0))

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [frame for frame in self.frames if frame["kind"] == kind]

    async def until(self, check: Callable[[], bool], within: float = WAIT_S) -> None:
        async with asyncio.timeout(within):
            while not check():
                self._arrived.clear()
                await self._arrived.wait()

    async def next_of_kind(self, *kinds: str, after: int = 0) -> dict[str, Any]:
        """The first frame of one of `kinds` at or after index `after`."""
        found: list[dict[str, Any]] = []

        def seen() -> bool:
            found[:] = [f for f in self.frames[after:] if f["kind"] in kinds]
            return bool(found)

        await self.until(seen)
        return found[0]

    async def take(self, pcm: bytes, *, pace: float | None, seat: dict[str, str] = SEAT,
                   options: dict[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
        """A whole take: stream, stop, and its `dictate_ended` or `dictate_failed`."""
        mark = len(self.frames)
        await self.send({"kind": "dictate_stream", "key": seat, "surface": "composer",
                         "options": options})  # fmt: skip
        await self.stream(pcm, pace=pace)
        await self.send({"kind": "dictate_stop", "key": seat})
        return await self.next_of_kind("dictate_ended", "dictate_failed", after=mark)

    async def close(self) -> None:
        await self.ws.close()
        self._reader.cancel()

    async def _read(self) -> None:
        async for message in self.ws:
            if isinstance(message, str):
                self.frames.append(json.loads(message))
                self._arrived.set()
