"""Containment: a flood, a slow reader or a killed supervisor stays where it happened."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

import psutil
import zmq

from forge.ipc.manager import WorkerEvent, WorkerManager
from forge.ipc.messages import StreamFrame
from forge.ipc.protocol import call
from forge.testing.misbehaving_protocol import MISBEHAVING, Echo, Flood, FloodDone, Received, Stream

from .helpers import misbehaving, ready


async def test_a_bulk_flood_on_one_worker_leaves_anothers_requests_answered(
    manager: WorkerManager,
) -> None:
    flooder = manager.start(misbehaving("flooder"))
    quiet = manager.start(misbehaving("quiet"))
    await ready(flooder)
    await ready(quiet)
    seqs: list[int] = []
    ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    done: asyncio.Future[WorkerEvent] = asyncio.get_running_loop().create_future()
    flooder.subscribe("frames", lambda f: seqs.append(f.seq), lambda s, r: ended.set_result(r))
    flooder.on_event(done.set_result)
    count = 3000
    await call(flooder, Flood(stream="frames", size=64 * 1024, count=count))
    answers = [await call(quiet, Echo(value=i)) for i in range(100)]
    assert answers == list(range(100))
    assert await ended == "flood_done"
    event = await done
    report = MISBEHAVING.decode_event(event.event, event.data)
    assert isinstance(report, FloodDone)
    assert report.offered == count
    assert len(seqs) == count - report.dropped
    assert seqs == sorted(set(seqs))
    assert seqs[-1] <= count


async def test_a_slow_reader_makes_the_supervisor_drop_not_block(manager: WorkerManager) -> None:
    reader = manager.start(misbehaving("slow-reader", bulk_delay=0.01))
    await ready(reader)
    payload = bytes(64 * 1024)
    sent = [reader.send_bulk("in", payload) for _ in range(2000)]
    assert sent[0]
    assert not all(sent)
    received = await call(reader, Received())
    accepted = [seq for seq, ok in enumerate(sent, start=1) if ok]
    assert received == accepted[: len(received)]
    assert await call(reader, Echo(value="control still flows")) == "control still flows"


async def test_frames_are_handed_on_as_views_of_the_received_frame(
    manager: WorkerManager,
) -> None:
    worker = manager.start(misbehaving("viewer"))
    frames: list[StreamFrame] = []
    ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    worker.subscribe("v", frames.append, lambda s, r: ended.set_result(None))
    chunk = os.urandom(1 << 20)
    await call(worker, Stream(stream="v", chunks=[chunk]))
    await ended
    [frame] = frames
    assert isinstance(frame.payload.obj, zmq.Frame)  # the received frame's buffer, not a copy
    assert frame.payload == chunk


async def test_sigkill_of_the_supervisor_leaves_no_worker_or_worker_child() -> None:
    host = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "forge.testing.manager_host",
        "2",
        stdout=asyncio.subprocess.PIPE,
    )
    assert host.stdout is not None
    try:
        line = await asyncio.wait_for(host.stdout.readline(), 60)
    except BaseException:
        host.kill()  # a host that never reported must not outlive the test
        await host.wait()
        raise
    report = json.loads(line)
    pids = [*report["workers"], *report["children"]]
    assert len(pids) == 4
    processes = [psutil.Process(pid) for pid in pids]
    assert all(p.is_running() for p in processes)
    host.send_signal(signal.SIGKILL)
    await host.wait()
    gone, alive = await asyncio.to_thread(psutil.wait_procs, processes, 30)
    assert alive == []
    assert len(gone) == 4


async def test_an_ended_bulk_stream_is_told_and_its_name_counts_from_one_again(
    manager: WorkerManager,
) -> None:
    worker = manager.start(misbehaving("ender"))
    await ready(worker)
    for payload in (b"a", b"b"):
        assert worker.send_bulk("take-1", payload)
    worker.end_bulk("take-1")
    assert worker.send_bulk("take-1", b"c")
    received: list[int] = []
    async with asyncio.timeout(30):  # bulk and control are two sockets: ask until all arrived
        while True:
            received = await call(worker, Received())
            if len(received) == 4:
                break
            await asyncio.sleep(0.01)
    assert received == [1, 2, 0, 1]
