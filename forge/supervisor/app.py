"""One running supervisor: the socket's core, the worker manager and every service on them.

`forge supervise` and in-process tests build the same thing here, so what a test drives is what
a person runs: terminals, browsers and dictation served through one `WorkerManager`, its rows
on home as `workers` (pushed as the keyless `workers_changed` on every change), a worker that can
no longer restart raised as home's `fatal_error`, and the forge health verdict as
`service_status`.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import signal
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator

from forge import allocator, census
from forge.config import ConfigWatcher, LoadedConfig
from forge.config.watcher import OnChange
from forge.health.service import home_service_status, service_status
from forge.ipc.manager import WorkerManager, WorkerRow, WorkerState
from forge.logs import get_logger
from forge.supervisor import lab, processes, settings
from forge.supervisor.agent import service as agent
from forge.supervisor.browser import service as browser
from forge.supervisor.seatfiles import service as seatfiles
from forge.supervisor.socket import client_perf
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.loopwatch import LoopWatch
from forge.supervisor.terminal import service as terminal
from forge.supervisor.voice import service as voice

log = get_logger(__name__)

SERVICE_STATUS_POLL_S = 5.0
"""How often the health verdict is re-read. It never probes (it reads the observations the
gh shim recorded), so a poll costs a few file reads; 5 s keeps home within one gh call's time."""


@contextlib.asynccontextmanager
async def running_supervisor(
    loaded: LoadedConfig,
    manager: WorkerManager | None = None,
    *,
    on_reload: OnChange | None = None,
) -> AsyncIterator[Supervisor]:
    """A supervisor with its services, stopped (workers included) when the block ends.

    forge.toml is watched from here (`on_reload` runs before each applied reload is pushed), so a
    client's settings save and an editor's change reach clients through the same reload."""
    async with contextlib.AsyncExitStack() as stack:
        if manager is None:
            manager = await stack.enter_async_context(WorkerManager())
        supervisor = Supervisor(loaded)
        stack.push_async_callback(supervisor.shutdown)

        def reloaded(new: LoadedConfig) -> None:
            if on_reload is not None:
                on_reload(new)
            supervisor.apply_config(new)

        watcher = ConfigWatcher(loaded.source, loaded, reloaded)
        shells = terminal.install(supervisor, manager)
        views = processes.install(supervisor, manager, shells.shell_pids)
        browser.install(supervisor, manager)
        settings.install(supervisor, watcher.check)
        seatfiles.install(supervisor, manager)
        client_perf.install(supervisor)
        voices = voice.install(supervisor, manager)
        lab.install(supervisor, manager, views.walker_handle)
        voices.agents = agent.install(supervisor, manager, speech=voices.speech)
        publish_workers(supervisor, manager)
        await _refresh_service_status(supervisor)
        poller = asyncio.create_task(_poll_service_status(supervisor))
        stack.callback(poller.cancel)
        watching = asyncio.create_task(watcher.run(clock=supervisor.clock))
        stack.callback(watching.cancel)
        trimming = asyncio.create_task(_give_back_freed(supervisor))
        stack.callback(trimming.cancel)
        _take_censuses_on_sigusr1(stack)
        loop_watch = LoopWatch(threshold_s=loaded.config.log.loop_stall_ms / 1000)
        loop_watch.start()
        stack.callback(loop_watch.stop)
        yield supervisor


def publish_workers(supervisor: Supervisor, manager: WorkerManager) -> None:
    supervisor.workers = lambda: [row.to_json() for row in manager.rows()]

    def changed(row: WorkerRow) -> None:
        supervisor.publish_keyless("workers_changed", {"workers": supervisor.workers()})
        if row.state is WorkerState.FAILED:
            reason = row.last_reason or "it kept crashing"
            supervisor.set_fatal_error(f"worker {row.name} ({row.kind}) failed: {reason}")

    manager.on_change(changed)


async def _refresh_service_status(supervisor: Supervisor) -> None:
    """Publish the verdict when it changes (`service_status_changed{status}`, O-S12)."""
    try:
        status = home_service_status(await asyncio.to_thread(service_status))
    except Exception:
        log.exception("service_status_unreadable")
        return
    if status != supervisor.service_status:
        supervisor.service_status = status
        supervisor.publish_keyless("service_status_changed", {"status": status})


REPORT_EVERY = 6
"""The heap's figures go to the log every this many trims (a minute)."""

COLLECT_EVERY = 60
"""A full garbage collection every this many trims (ten minutes), just before the trim. Cycles
(an exception, its traceback, the frames that hold it) otherwise wait for CPython's full
collection, which ~60,000 long-lived objects make rare, and what they hold stays resident. In
the chaos hours collected this often the live objects stayed flat (resident growth 0.14 and
2.45 MB/hour, the second glibc's free space, not objects: docs/benchmarks.md).
About 30 ms of CPU for ~47,000 objects (an interpreter with the supervisor's modules loaded)."""


async def _give_back_freed(supervisor: Supervisor) -> None:
    """The heap's freed pages back to the system now and then (`forge.allocator`), and its
    figures in the log once a minute: a resident size that grows is read against them (objects
    that live on, free space the heap keeps, or the seats' windows filling to their bound),
    and the longest trim of the minute against the loop's latency."""
    longest_trim_s = 0.0
    for turn in itertools.count(1):
        await supervisor.clock.sleep(allocator.TRIM_EVERY_S)
        if turn % COLLECT_EVERY == 0:
            gc.collect()
        started = time.perf_counter()
        allocator.give_back_freed()
        longest_trim_s = max(longest_trim_s, time.perf_counter() - started)
        if turn % REPORT_EVERY:
            continue
        figures = allocator.heap()
        if figures is not None:
            held = [state.window.held for state in supervisor.seats]
            log.info(
                "heap",
                in_use=figures.in_use,
                free=figures.free,
                mmapped=figures.mmapped,
                python_blocks=sys.getallocatedblocks(),
                window_frames=sum(frames for frames, _ in held),
                window_bytes=sum(size for _, size in held),
                longest_trim_ms=round(longest_trim_s * 1000, 2),
            )
        longest_trim_s = 0.0


CENSUS_TOP = 30
"""Types a census logs: the most numerous, and those that grew most since the previous one."""
CENSUS_LARGEST = 10
"""Containers a census names, the longest first."""
CENSUS_HELD = 3
"""Types that grew most whose holders a census follows (`census.holders`)."""


def _take_censuses_on_sigusr1(stack: contextlib.AsyncExitStack) -> None:
    """`kill -USR1 <supervisor>` logs what it holds (`forge.census`): an operator's first look
    at a growing resident size, and the chaos bench's, without stopping the supervisor."""
    loop = asyncio.get_running_loop()
    previous: list[Counter[str]] = []

    def take() -> None:
        garbage = gc.collect()  # cycles waiting for a full collection are not living
        counts = census.live_objects()
        grown = census.grown(previous[-1], counts, CENSUS_TOP) if previous else []
        log.info(
            "census",
            garbage=garbage,
            objects=counts.total(),
            python_blocks=sys.getallocatedblocks(),
            most=counts.most_common(CENSUS_TOP),
            grown=grown,
            largest=census.largest_containers(CENSUS_LARGEST),
            holders=census.holders([kind for kind, _, _ in grown[:CENSUS_HELD]]),
        )
        previous[:] = [counts]

    loop.add_signal_handler(signal.SIGUSR1, take)
    stack.callback(loop.remove_signal_handler, signal.SIGUSR1)


async def _poll_service_status(supervisor: Supervisor) -> None:
    while True:
        await supervisor.clock.sleep(SERVICE_STATUS_POLL_S)
        await _refresh_service_status(supervisor)
