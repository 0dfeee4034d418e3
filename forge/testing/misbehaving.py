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
  spawn_child       start a `sleep` child: "pdeathsig" (dies with us, like a PTY shell) or
                    "group" (left in our process group, for the group kill to find)
  bulk_delay        seconds to sleep per received bulk frame (a slow reader)
requests:
  echo {..}         the args back, and every payload frame back
  pid               os.getpid()
  children          pids of the children `spawn_child` started
  sleep {seconds}   answer after an asyncio sleep
  block {seconds}   block the event loop (no heartbeats) with time.sleep
  flood {stream, size, count}  offer `count` frames of `size` bytes on `stream`, dropping when
                    full; answers at once, emits `flood_done {offered, dropped}` when finished
  pump {stream, size, count}  send `count` frames of `size` bytes with backpressure (none
                    dropped), then end the stream with "pumped"
  stream {stream, chunks}  send each chunk (bytes) with backpressure, then end the stream
  emit {event, data}  emit that event
  received          how many bulk frames arrived, and their seqs
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Any

from forge.ipc.errors import WorkerConfigError
from forge.ipc.messages import Reply, Request, StreamFrame
from forge.ipc.orphans import die_with_parent
from forge.ipc.worker import Worker, handles, run_worker


class MisbehavingWorker(Worker):
    kind = "misbehaving"
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

    @handles("echo")
    async def echo(self, request: Request) -> Reply:
        self._count()
        return Reply(request.args, tuple(bytes(p) for p in request.payloads))

    @handles("pid")
    async def pid(self, request: Request) -> int:
        self._count()
        return os.getpid()

    @handles("children")
    async def children(self, request: Request) -> list[int]:
        return [child.pid for child in self._children]

    @handles("sleep")
    async def sleep(self, request: Request) -> str:
        self._count()
        await asyncio.sleep(float(request.args["seconds"]))
        return "slept"

    @handles("block")
    async def block(self, request: Request) -> str:
        time.sleep(float(request.args["seconds"]))  # noqa: ASYNC251 (the point: a stuck loop)
        return "blocked"

    @handles("flood")
    async def flood(self, request: Request) -> str:
        args = request.args
        self.spawn(self._flood(str(args["stream"]), int(args["size"]), int(args["count"])))
        return "flooding"

    async def _flood(self, stream_id: str, size: int, count: int) -> None:
        stream = self.stream(stream_id)
        payload = bytes(size)
        for _ in range(count):
            stream.offer(payload)
            await asyncio.sleep(0)
        await stream.end("flood_done")
        await self.emit("flood_done", {"offered": stream.seq - 1, "dropped": stream.dropped})

    @handles("pump")
    async def pump(self, request: Request) -> int:
        args = request.args
        stream = self.stream(str(args["stream"]))
        payload = bytes(int(args["size"]))
        for _ in range(int(args["count"])):
            await stream.send(payload)
        await stream.end("pumped")
        return stream.seq

    @handles("stream")
    async def send_stream(self, request: Request) -> int:
        stream = self.stream(str(request.args["stream"]))
        for chunk in request.args["chunks"]:
            await stream.send(chunk, {"size": len(chunk)})
        await stream.end("finished")
        return stream.seq

    @handles("emit")
    async def emit_event(self, request: Request) -> None:
        await self.emit(str(request.args["event"]), request.args.get("data"), request.payloads)

    @handles("received")
    async def received(self, request: Request) -> list[int]:
        return self._received

    async def on_bulk(self, frame: StreamFrame) -> None:
        self._received.append(frame.seq)
        delay = float(self.config.get("bulk_delay", 0))
        if delay:
            await asyncio.sleep(delay)


if __name__ == "__main__":
    run_worker(MisbehavingWorker)
