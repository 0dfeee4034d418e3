"""A supervisor serving the terminal verbs in the test's loop, and a client that records frames.

For tests of anything that shows a terminal to a client. `serve_terminals` runs the socket and
the terminal service (bash as every shell) in this process; `Client` keeps every JSON frame and
every kind-4 output chunk in arrival order and awaits them, and can draw its screen with pyte:

    async with serve_terminals(tmp_path / "proj", tmp_path, free_port) as served:
        client = await Client.open(served.url)
        await client.send({"kind": "terminal_view", "seat": SEAT, "reply_to": 1})
        terminal = (await client.next_of_kind("reply"))["body"]["id"]
        await client.type(terminal, b"echo hi\r")
        await client.wait_output(b"hi")
        await client.wait_screen("hi")           # what this client would draw
        await client.close()

`Client` works against any `/socket` URL (a `forge supervise` from `supervised.py` too).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pyte
from websockets.asyncio.client import ClientConnection, connect

from forge.client.auth import subprotocols
from forge.config import load_config
from forge.ipc.manager import WorkerManager
from forge.ipc.policy import LifecycleTimings
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.server import SocketServer
from forge.supervisor.terminal.service import TerminalService, install
from forge.testing.vtscreen import TerminalScreen
from forge.wire.binary import TERMINAL_OUTPUT_HEADER, terminal_input

BASH = ["/bin/bash", "--noprofile", "--norc", "-i"]
SEAT = {"org": "acme", "project": "forge", "label": "main"}
TIMINGS = LifecycleTimings(hello_timeout=30.0, request_timeout=30.0, kill_grace=0.5)


class Served:
    def __init__(self, supervisor: Supervisor, service: TerminalService, port: int) -> None:
        self.supervisor = supervisor
        self.service = service
        self.url = f"ws://127.0.0.1:{port}/socket"


@asynccontextmanager
async def serve_terminals(project: Path, config_dir: Path, port: int) -> AsyncIterator[Served]:
    """forge.toml with one project at `project`, the socket on `port`, bash as every shell."""
    toml = config_dir / "forge.toml"
    toml.write_text(f'[[projects]]\norg = "acme"\nname = "forge"\npath = "{project}"\n')
    loaded = load_config(toml, overrides={"server.port": port})
    supervisor = Supervisor(loaded)
    async with WorkerManager(timings=TIMINGS) as manager:
        service = install(supervisor, manager, host_config={"argv": BASH})
        socket = SocketServer(supervisor)
        await socket.start()
        try:
            yield Served(supervisor, service, port)
        finally:
            await socket.close()
            await supervisor.shutdown()


class Client:
    """One socket client: JSON frames and kind-4 chunks as they arrive, and ways to await them."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.frames: list[dict[str, Any]] = []
        self.chunks: list[tuple[int, bytes]] = []
        self.data = bytearray()
        """Every chunk's bytes, in arrival order."""
        self.events: list[tuple[str, Any]] = []
        """Every frame in arrival order: ("json", message) or ("chunk", seq)."""
        self._changed = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read())
        self.reading = asyncio.Event()
        self.reading.set()

    @classmethod
    async def open(cls, url: str, **kwargs: Any) -> Client:
        # No client pings: drawing a screen in pyte can hold this test loop for a while.
        ws = await connect(
            url, max_size=None, ping_interval=None, subprotocols=subprotocols(), **kwargs
        )
        client = cls(ws)
        await client.until(lambda: any(f["kind"] == "settings" for f in client.frames))
        return client

    async def _read(self) -> None:
        async for message in self.ws:
            await self.reading.wait()
            if isinstance(message, str):
                frame = json.loads(message)
                self.frames.append(frame)
                self.events.append(("json", frame))
            else:
                _, _, seq = TERMINAL_OUTPUT_HEADER.unpack_from(message)
                chunk = message[TERMINAL_OUTPUT_HEADER.size :]
                self.chunks.append((seq, chunk))
                self.data += chunk
                self.events.append(("chunk", seq))
            self._changed.set()

    async def until(self, check: Callable[[], bool]) -> None:
        while not check():
            self._changed.clear()
            if self._reader.done():
                self._reader.result()
                raise AssertionError("the connection closed")
            await self._changed.wait()

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(message))

    async def type(self, terminal: int, keys: bytes) -> None:
        await self.ws.send(terminal_input(terminal=terminal, data=keys))

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f["kind"] == kind]

    async def next_of_kind(self, kind: str, after: int = 0) -> dict[str, Any]:
        """The first frame of `kind` beyond the first `after` of that kind."""
        await self.until(lambda: len(self.of_kind(kind)) > after)
        return self.of_kind(kind)[after]

    def output(self) -> bytes:
        return bytes(self.data)

    async def wait_output(self, text: bytes) -> None:
        await self.until(lambda: text in self.data)

    async def wait_prompt_after(self, marker: bytes) -> None:
        """Until the output's tail holds `marker` and then a prompt (cheap on a long stream)."""
        await self.until(lambda: b"$ " in bytes(self.data[-4096:]).partition(marker)[2])

    async def wait_screen(self, text: str) -> None:
        """Until `text` is on the screen this client draws (its view plus the chunks after)."""
        await self.until(
            lambda: bool(self.of_kind("terminal_view")) and text in "\n".join(self.screen().display)
        )

    def updates(self, variant: str) -> list[Any]:
        return [
            f["update"][variant]
            for f in self.frames
            if f["kind"] == "update" and isinstance(f["update"], dict) and variant in f["update"]
        ]

    def screen(self) -> TerminalScreen:
        """What this client draws: its last view, then the chunks after the view's seq."""
        view = self.of_kind("terminal_view")[-1]
        screen = TerminalScreen(view["cols"], view["rows"])
        stream = pyte.ByteStream(screen)
        stream.feed(view["screen"].encode())
        index = max(i for i, (k, f) in enumerate(self.events) if k == "json" and f is view)
        chunks = dict(self.chunks)
        for kind, item in self.events[index + 1 :]:
            if kind == "chunk" and item > view["seq"]:
                stream.feed(chunks[item])
        return screen

    async def close(self) -> None:
        self.reading.set()
        await self.ws.close()
        self._reader.cancel()
