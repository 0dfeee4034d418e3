"""The lifecycle with real worker processes: requests, deaths, hangs, crash loops, stops."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest
from structlog.testing import capture_logs

from forge.ipc.errors import RequestFailed, RequestTimeout, WorkerCrashed, WorkerUnavailable
from forge.ipc.exits import CONFIG_ERROR_EXIT
from forge.ipc.manager import WorkerEvent, WorkerManager, WorkerRow, WorkerState
from forge.ipc.messages import StreamFrame
from forge.ipc.protocol import call, call_raw
from forge.testing.misbehaving_protocol import (
    MISBEHAVING,
    Block,
    Children,
    Echo,
    Emit,
    Pid,
    Sleep,
    Stream,
    Title,
)

from .helpers import HANG_TIMINGS, TEST_TIMINGS, misbehaving, ready


async def test_requests_carry_args_and_raw_payload_frames_both_ways(
    manager: WorkerManager,
) -> None:
    worker = manager.start(misbehaving("echo"))
    big = os.urandom(100_000)
    value, reply = await call_raw(worker, Echo(value={"n": [1, "two"]}), payloads=(b"small", big))
    assert value == {"n": [1, "two"]}
    assert [bytes(p) for p in reply.payloads] == [b"small", big]
    assert all(isinstance(p, memoryview) for p in reply.payloads)
    assert worker.capabilities == ("echo", "flood")


async def test_a_handler_refusal_arrives_with_its_code(manager: WorkerManager) -> None:
    worker = manager.start(misbehaving("refuser"))
    with pytest.raises(RequestFailed) as refused:
        await worker.request("no_such_method")
    assert refused.value.code == "unknown_method"
    assert "misbehaving workers have no 'no_such_method'" in refused.value.message


async def test_events_reach_every_listener(manager: WorkerManager) -> None:
    worker = manager.start(misbehaving("emitter"))
    events: list[WorkerEvent] = []
    worker.on_event(events.append)
    await call_raw(worker, Emit(title="vim"), payloads=(b"raw",))
    await call(worker, Pid())  # same channel, so the event came first
    assert [(e.worker, e.event, e.data, bytes(e.payloads[0])) for e in events] == [
        ("emitter", "title", {"text": "vim"}, b"raw")
    ]
    assert MISBEHAVING.decode_event(events[0].event, events[0].data) == Title(text="vim")


async def test_a_request_times_out_at_its_own_deadline_and_the_worker_lives_on(
    manager: WorkerManager,
) -> None:
    worker = manager.start(misbehaving("slow"))
    await ready(worker)
    with pytest.raises(RequestTimeout) as late:
        await call(worker, Sleep(seconds=30), within=0.2)
    assert late.value.code == "timeout"
    assert await call(worker, Echo(value="still here")) == "still here"


async def test_kill_9_fails_in_flight_requests_restarts_and_spares_the_other_worker(
    manager: WorkerManager,
) -> None:
    victim = manager.start(misbehaving("victim"))
    bystander = manager.start(misbehaving("bystander"))
    await ready(victim)
    await ready(bystander)
    bystander_pid = bystander.pid
    in_flight = [asyncio.ensure_future(call(victim, Sleep(seconds=30))) for _ in range(3)]
    assert await call(victim, Echo(value="sync")) == "sync"  # the sleeps have arrived
    assert victim.pid is not None
    os.kill(victim.pid, signal.SIGKILL)
    results = await asyncio.gather(*in_flight, return_exceptions=True)
    assert all(isinstance(r, WorkerCrashed) and r.code == "worker_crashed" for r in results)
    await ready(victim, restarts=1)
    assert await call(victim, Echo(value="back")) == "back"
    row = victim.row
    assert (row.last_exit, row.last_reason) == ("SIGKILL", "killed by SIGKILL")
    assert bystander.row == WorkerRow(
        "bystander", "misbehaving", bystander_pid, WorkerState.READY, 0, None, None
    )
    assert await call(bystander, Pid()) == bystander_pid


async def test_a_crash_ends_every_stream_it_served(manager: WorkerManager) -> None:
    worker = manager.start(misbehaving("streamer", crash_after=0))
    ended: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
    worker.subscribe("pty", print, lambda stream, reason: ended.set_result((stream, reason)))
    with pytest.raises(WorkerCrashed):
        await call(worker, Echo(value="dies on the first request"))
    assert await ended == ("pty", "worker_crashed")


async def test_stream_frames_arrive_whole_in_order_and_end_with_the_workers_reason(
    manager: WorkerManager,
) -> None:
    worker = manager.start(misbehaving("bytes"))
    frames: list[StreamFrame] = []
    ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    worker.subscribe("out", frames.append, lambda stream, reason: ended.set_result(reason))
    chunks = [os.urandom(size) for size in (1, 16 * 1024, 1 << 20)]
    assert await call(worker, Stream(stream="out", chunks=chunks)) == 4
    assert await ended == "finished"
    assert [(f.seq, f.meta, bytes(f.payload)) for f in frames] == [
        (i + 1, {"size": len(c)}, c) for i, c in enumerate(chunks)
    ]
    assert all(isinstance(f.payload, memoryview) for f in frames)


async def test_sigstop_is_caught_by_missed_heartbeats_then_killed_and_restarted(
    forge_dirs: dict[str, Path],
) -> None:
    async with WorkerManager(timings=HANG_TIMINGS) as manager:
        worker = manager.start(misbehaving("stopped", ignore_sigterm=True))
        await ready(worker)
        assert worker.pid is not None
        first_pid = worker.pid
        os.kill(first_pid, signal.SIGSTOP)
        await ready(worker, restarts=1)
        assert worker.row.last_exit == "SIGKILL"
        assert worker.row.last_reason == "hung: no heartbeat for 0.5 s; killed by SIGKILL"
        assert not psutil.pid_exists(first_pid)
        assert await call(worker, Echo(value=1)) == 1


async def test_a_stall_of_the_supervisor_itself_is_not_a_worker_hang(
    forge_dirs: dict[str, Path],
) -> None:
    """The watchdog judges only time the supervisor was running to hear heartbeats: after its
    own loop stalls (a long synchronous step, a machine under load) past the hang bound, the
    heartbeats waiting in the socket are heard, and no worker is killed. (Hung after 2 s of
    silence, so a loaded machine's workers are not really silent that long in the window.)"""
    timings = dataclasses.replace(TEST_TIMINGS, heartbeat_interval=0.4)
    async with WorkerManager(timings=timings) as manager:
        workers = [manager.start(misbehaving(f"steady-{n}")) for n in range(3)]
        for worker in workers:
            await ready(worker)
        pids = [worker.pid for worker in workers]
        with capture_logs() as records:
            time.sleep(timings.hang_after * 3)  # noqa: ASYNC251 (the stall under test)
            for worker in workers:  # each round trip lets the loop read what waited
                assert await call(worker, Echo(value=1)) == 1
            await asyncio.sleep(timings.hang_after * 2)  # the bound, with heartbeats heard
        assert [r for r in records if r["event"] == "worker_hang"] == []
        assert [(w.pid, w.row.restarts, w.row.state) for w in workers] == [
            (pid, 0, "ready") for pid in pids
        ]


async def test_a_hung_worker_that_honours_sigterm_exits_on_it(
    forge_dirs: dict[str, Path],
) -> None:
    async with WorkerManager(timings=HANG_TIMINGS) as manager:
        worker = manager.start(misbehaving("paused"))
        await ready(worker)
        assert worker.pid is not None
        os.kill(worker.pid, signal.SIGSTOP)
        await ready(worker, restarts=1)
        assert worker.row.last_reason == "hung: no heartbeat for 0.5 s; exit code 0"


async def test_a_crash_loop_backs_off_longer_each_time_then_fails(
    manager: WorkerManager,
) -> None:
    with capture_logs() as records:
        worker = manager.start(misbehaving("looper", crash_on_start=True))
        row = await worker.wait_for(lambda r: r.state == "failed", 60.0)
    delays = [r["delay"] for r in records if r["event"] == "worker_restart_scheduled"]
    assert delays == [0.02, 0.04, 0.08, 0.16, 0.2]
    assert row.restarts == 5
    assert row.last_exit == 3
    assert row.last_reason == "6 crashes within 300 s (last: exit code 3)"
    assert row.pid is None
    with pytest.raises(WorkerUnavailable, match="failed: 6 crashes"):
        await call(worker, Echo(value=1))


async def test_a_configuration_error_exit_is_never_restarted(manager: WorkerManager) -> None:
    changes: list[WorkerRow] = []
    manager.on_change(changes.append)
    worker = manager.start(misbehaving("misconfigured", config_error=True))
    row = await worker.wait_for(lambda r: r.state == "failed", 60.0)
    assert (row.restarts, row.last_exit) == (0, CONFIG_ERROR_EXIT)
    assert row.last_reason == (
        "config_error was asked for; configuration error (exit code 78); not restarting"
    )
    assert [c.state for c in changes] == ["starting", "failed"]


async def test_a_protocol_mismatch_is_rejected_logged_and_not_restarted(
    manager: WorkerManager,
) -> None:
    with capture_logs() as records:
        worker = manager.start(misbehaving("future", protocol=99))
        row = await worker.wait_for(lambda r: r.state == "failed", 60.0)
    rejected = [r for r in records if r["event"] == "ipc_protocol_rejected"]
    assert rejected[0]["reason"] == "protocol 99 (envelope 1) is not 1"
    assert row.last_reason == (
        "rejected: protocol 99 (envelope 1) is not 1; "
        "configuration error (exit code 78); not restarting"
    )


async def test_stop_is_graceful_and_never_restarts(manager: WorkerManager) -> None:
    worker = manager.start(misbehaving("polite"))
    await ready(worker)
    await worker.stop()
    assert worker.row == WorkerRow(
        "polite", "misbehaving", None, WorkerState.STOPPED, 0, 0, "exit code 0"
    )
    with pytest.raises(WorkerUnavailable):
        await call(worker, Echo(value=1))


async def test_sigint_stops_a_worker_in_order_and_quietly(
    manager: WorkerManager, capfd: pytest.CaptureFixture[str]
) -> None:
    """A SIGINT (a Ctrl-C sent to the worker's group) is a graceful stop like SIGTERM: teardown,
    exit 0, no KeyboardInterrupt traceback on the stderr it shares with the supervisor. Nobody
    asked the manager for it, so the worker is restarted."""
    worker = manager.start(misbehaving("interrupted"))
    await ready(worker)
    assert worker.pid is not None
    os.killpg(worker.pid, signal.SIGINT)
    await ready(worker, restarts=1)
    assert (worker.row.last_exit, worker.row.last_reason) == (0, "exit code 0")
    assert "Traceback" not in capfd.readouterr().err


async def test_stop_escalates_to_sigkill_for_a_worker_that_ignores_sigterm(
    forge_dirs: dict[str, Path],
) -> None:
    timings = dataclasses.replace(TEST_TIMINGS, stop_timeout=0.2, kill_grace=0.2)
    async with WorkerManager(timings=timings) as manager:
        worker = manager.start(misbehaving("stubborn", ignore_sigterm=True))
        await worker.wait_for(lambda r: r.state == "ready", 60.0)
        blocked = asyncio.ensure_future(call(worker, Block(seconds=30)))
        await asyncio.sleep(0)
        await worker.stop()
        assert worker.row.last_exit == "SIGKILL"
        assert worker.row.last_reason == "did not stop when asked; killed by SIGKILL"
        with pytest.raises(WorkerUnavailable):
            await blocked


async def test_children_left_in_the_group_die_with_the_worker(manager: WorkerManager) -> None:
    worker = manager.start(misbehaving("parent", spawn_child="group"))
    [pid] = await call(worker, Children())
    child = psutil.Process(pid)  # taken now: once killed, the child may be reaped at any time
    assert worker.pid is not None
    os.kill(worker.pid, signal.SIGKILL)
    await ready(worker, restarts=1)
    gone, alive = psutil.wait_procs([child], timeout=30)
    assert (len(gone), alive) == (1, [])


async def test_a_worker_that_never_says_hello_is_stopped_and_restarted(
    forge_dirs: dict[str, Path],
) -> None:
    timings = dataclasses.replace(TEST_TIMINGS, hello_timeout=0.5)
    async with WorkerManager(timings=timings) as manager:
        worker = manager.start(misbehaving("mute", silent_start=True))
        row = await worker.wait_for(lambda r: r.restarts == 1, 60.0)
        assert row.state == "restarting"
        assert row.last_reason is not None
        assert row.last_reason.startswith("no hello within 0.5 s; ")


async def test_a_hello_inside_the_kill_grace_never_shows_the_worker_ready() -> None:
    timings = dataclasses.replace(TEST_TIMINGS, hello_timeout=1.0, kill_grace=3.0)
    async with WorkerManager(timings=timings) as manager:
        heard: list[WorkerRow] = []
        manager.on_change(heard.append)
        late = misbehaving("late", ignore_sigterm=True, hello_delay=1.5)
        worker = manager.start(late)
        row = await worker.wait_for(lambda r: r.restarts == 1, 60.0)
        assert row.last_reason is not None
        assert row.last_reason.startswith("no hello within 1 s; ")
        assert [r for r in heard if r.restarts == 0 and r.state == "ready"] == []


async def test_remove_stops_the_worker_forgets_its_row_and_frees_the_name(
    manager: WorkerManager,
) -> None:
    heard: list[WorkerRow] = []
    manager.on_change(heard.append)
    worker = manager.start(misbehaving("closing"))
    keeper = manager.start(misbehaving("keeper"))
    await ready(worker)
    await manager.remove("closing")
    assert [row.name for row in manager.rows()] == ["keeper"]
    assert (heard[-1].name, heard[-1].state) == ("closing", "stopped")
    again = manager.start(misbehaving("closing"))
    assert await call(again, Echo(value="new")) == "new"
    assert await call(keeper, Echo(value="kept")) == "kept"


async def test_a_failing_subscriber_does_not_stop_the_others(manager: WorkerManager) -> None:
    worker = manager.start(misbehaving("shared"))
    seen: list[int] = []
    ended: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def broken(frame: StreamFrame) -> None:
        raise RuntimeError("a subscriber bug")

    worker.subscribe("out", broken, print)
    worker.subscribe(None, lambda f: seen.append(f.seq), lambda s, r: ended.set_result(r))
    await call(worker, Stream(stream="out", chunks=[b"a", b"b"]))
    assert await ended == "finished"
    assert seen == [1, 2]
    assert await call(worker, Echo(value="alive")) == "alive"


async def test_a_module_that_cannot_start_fails_the_worker(manager: WorkerManager) -> None:
    spec = MISBEHAVING.spec("nowhere", cwd=Path("/nope"))
    row = await manager.start(spec).wait_for(lambda r: r.state == "failed", 30.0)
    assert row.last_reason is not None
    assert row.last_reason.startswith("could not start forge.testing.misbehaving: ")


async def test_a_worker_started_by_hand_refuses_with_the_config_error_code() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "forge.testing.misbehaving",
        stderr=asyncio.subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if not k.startswith("FORGE_")},
    )
    _, stderr = await process.communicate()
    assert process.returncode == CONFIG_ERROR_EXIT
    assert b"workers are started by forge's worker manager, not by hand" in stderr


async def test_a_spec_can_bring_its_own_timings(manager: WorkerManager) -> None:
    own = dataclasses.replace(TEST_TIMINGS, hello_timeout=0.3)
    worker = manager.start(
        MISBEHAVING.spec("impatient", config={"silent_start": True}, timings=own)
    )
    row = await worker.wait_for(lambda r: r.restarts == 1, 60.0)
    assert row.last_reason is not None
    assert row.last_reason.startswith("no hello within 0.3 s; ")
