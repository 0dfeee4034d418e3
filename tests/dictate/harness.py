"""A client that streams takes at a chosen pace (the served supervisor is
`forge.testing.dictation`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from forge.client.auth import subprotocols
from forge.testing.dictation import Served, serve_dictation
from forge.wire.binary import dictation as kind0
from forge.workers.dictate.audio import FRAME_BYTES, FRAME_MS

__all__ = ["Served", "serve_dictation"]

SEAT = {"org": "acme", "project": "proj", "label": "a"}
OTHER = {"org": "acme", "project": "proj", "label": "b"}
WAIT_S = 240.0
"""How long a take's end may take on a loaded two-core machine (decodes queue behind others)."""


async def eventually(check: Callable[[], Any], within: float = WAIT_S) -> None:
    """Ask `check` again until it holds: for state no frame announces (a worker's take table)."""
    async with asyncio.timeout(within):
        while not (await check() if asyncio.iscoroutinefunction(check) else check()):  # noqa: ASYNC110 (no event announces it)
            await asyncio.sleep(0.02)


class Client:
    """One socket client: every JSON frame as it arrives, and ways to wait for them."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.frames: list[dict[str, Any]] = []
        self._arrived = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, url: str) -> Client:
        ws = await connect(url, max_size=None, subprotocols=subprotocols())
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
                   options: dict[str, str] | None = None,
                   send: bool = False) -> dict[str, Any]:  # fmt: skip
        """A whole take: stream, stop (with `send`: as the seat's agent's next prompt), and its
        `dictate_ended` or `dictate_failed`."""
        mark = len(self.frames)
        await self.send({"kind": "dictate_stream", "key": seat, "surface": "composer",
                         "options": options})  # fmt: skip
        await self.stream(pcm, pace=pace)
        await self.send({"kind": "dictate_stop", "key": seat, "send": send})
        return await self.next_of_kind("dictate_ended", "dictate_failed", after=mark)

    async def close(self) -> None:
        await self.ws.close()
        self._reader.cancel()

    async def _read(self) -> None:
        async for message in self.ws:
            if isinstance(message, str):
                self.frames.append(json.loads(message))
                self._arrived.set()
