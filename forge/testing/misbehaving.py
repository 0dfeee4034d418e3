"""A worker that misbehaves on request, as a real process (`python -m forge.testing.misbehaving`).

Its `config` (the `WorkerSpec.config`) scripts what goes wrong from the start; its requests
script what goes wrong later. Every later worker kind's tests can use it as the "other worker".

config keys:
  crash_on_start    exit 3 before saying hello
  silent_start      never finish setup, so never say hello
  config_error      raise WorkerConfigError in setup (exit CONFIG_ERROR_EXIT)
  crash_after       die by SIGKILL while handling request number N+1 (it is never answered)
  ignore_sigterm    SIG_IGN for SIGTERM, so only SIGKILL ends it
  protocol          announce this protocol version in hello instead of the real one
  hello_delay       seconds to wait in setup before saying hello
  spawn_child       start a `sleep` child: "pdeathsig" (dies with us, like a PTY shell) or
                    "group" (left in our process group, for the group kill to find)
  bulk_delay        seconds to sleep per received bulk frame (a slow reader)
  lend              lend the supervisor the read end of a pipe holding this text, then close
                    the worker's copies (`forge.ipc.lending`)
requests and events: `forge.testing.misbehaving_protocol` (echo, pid, children, sleep, block,
  flood, pump, stream, emit, received; flood_done, title).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Any

from forge.ipc.errors import WorkerConfigError
from forge.ipc.messages import Reply, StreamFrame
from forge.ipc.orphans import die_with_parent
from forge.ipc.worker import Worker, handles, run_worker
from forge.testing.misbehaving_protocol import (
    MISBEHAVING,
    Block,
    Children,
    Echo,
    Emit,
    Flood,
    FloodDone,
    Pid,
    Pump,
    Received,
    Sleep,
    Stream,
    Title,
)


class MisbehavingWorker(Worker):
    kind = MISBEHAVING.kind
    capabilities = ("echo", "flood")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.protocol = int(self.config.get("protocol", self.protocol))
        self._answered = 0
        self._children: list[asyncio.subprocess.Process] = []
        self._received: list[int] = []

    async def setup(self) -> None:
        if self.config.get("crash_on_start"):
            os._exit(3)
        if self.config.get("silent_start"):
            await asyncio.Event().wait()
        if self.config.get("config_error"):
            raise WorkerConfigError("config_error was asked for")
        if self.config.get("ignore_sigterm"):
            asyncio.get_running_loop().remove_signal_handler(signal.SIGTERM)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        await asyncio.sleep(float(self.config.get("hello_delay", 0)))
        if "lend" in self.config:
            read_end, write_end = os.pipe()
            os.write(write_end, str(self.config["lend"]).encode())
            self.lend(read_end)
            os.close(read_end)
            os.close(write_end)
        child_kind = self.config.get("spawn_child")
        if child_kind:
            preexec = die_with_parent if child_kind == "pdeathsig" else None
            child = await asyncio.create_subprocess_exec("sleep", "300", preexec_fn=preexec)
            self._children.append(child)

    async def teardown(self) -> None:
        for child in self._children:
            child.kill()
            await child.wait()

    def _count(self) -> None:
        limit = self.config.get("crash_after")
        if limit is not None and self._answered >= int(limit):
            os.kill(os.getpid(), signal.SIGKILL)
        self._answered += 1

    @handles(Echo, payloads=True)
    async def echo(self, request: Echo, payloads: tuple[memoryview, ...]) -> Reply:
        self._count()
        return Reply(request.value, tuple(bytes(p) for p in payloads))

    @handles(Pid)
    async def pid(self, request: Pid) -> int:
        self._count()
        return os.getpid()

    @handles(Children)
    async def children(self, request: Children) -> list[int]:
        return [child.pid for child in self._children]

    @handles(Sleep)
    async def sleep(self, request: Sleep) -> str:
        self._count()
        await asyncio.sleep(request.seconds)
        return "slept"

    @handles(Block)
    async def block(self, request: Block) -> str:
        time.sleep(request.seconds)  # noqa: ASYNC251 (the point: a stuck loop)
        return "blocked"

    @handles(Flood)
    async def flood(self, request: Flood) -> str:
        self.spawn(self._flood(request.stream, request.size, request.count))
        return "flooding"

    async def _flood(self, stream_id: str, size: int, count: int) -> None:
        stream = self.stream(stream_id)
        payload = bytes(size)
        for _ in range(count):
            stream.offer(payload)
            await asyncio.sleep(0)
        await stream.end("flood_done")
        await self.emit(FloodDone(offered=stream.seq - 1, dropped=stream.dropped))

    @handles(Pump)
    async def pump(self, request: Pump) -> int:
        stream = self.stream(request.stream)
        payload = bytes(request.size)
        for _ in range(request.count):
            await stream.send(payload)
        await stream.end("pumped")
        return stream.seq

    @handles(Stream)
    async def send_stream(self, request: Stream) -> int:
        stream = self.stream(request.stream)
        for chunk in request.chunks:
            await stream.send(chunk, {"size": len(chunk)})
        await stream.end("finished")
        return stream.seq

    @handles(Emit, payloads=True)
    async def emit_title(self, request: Emit, payloads: tuple[memoryview, ...]) -> None:
        await self.emit(Title(text=request.title), payloads)

    @handles(Received)
    async def received(self, request: Received) -> list[int]:
        return self._received

    async def on_bulk_end(self, stream_id: str, reason: str) -> None:
        self._received.append(0)

    async def on_bulk(self, frame: StreamFrame) -> None:
        self._received.append(frame.seq)
        delay = float(self.config.get("bulk_delay", 0))
        if delay:
            await asyncio.sleep(delay)


if __name__ == "__main__":
    run_worker(MisbehavingWorker)
