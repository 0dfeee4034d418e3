"""Run one attempt command (harness, setup, check) as a watched, killable process tree.

Each command starts in its own session and dies with the process that started it (a runner
killed mid-attempt takes its commands along). A walker samples its tree for peak RSS and CPU.
On timeout, cancellation or an output flood the whole tree gets SIGTERM, then SIGKILL after a grace;
after every command, whatever is left in its group or carries the attempt's marker variable (a
double-forked child in a session of its own) is killed and counted as a stray.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from forge import eventloop
from forge.attempt.sandbox import Sandbox, args_fd
from forge.clock import Clock
from forge.ipc.orphans import die_with_parent
from forge.logs import get_logger
from forge.procs import (
    ProcessWalker,
    find_by_environ,
    group_pids,
    is_live,
    kill_processes,
    wait_for_exit,
)

KILL_GRACE_S = 2.0
"""SIGTERM, then SIGKILL this long after (acceptance table A5)."""
SAMPLE_S = 0.2
"""How often the walker samples a running command's tree."""
MARKER_ENV = "FORGE_ATTEMPT_ID"
"""Every process an attempt starts carries this variable; strays are found by it."""

log = get_logger(__name__)


@dataclass
class Usage:
    """What the walker saw of one command's tree."""

    peak_rss_bytes: int = 0
    cpu_by_pid: dict[tuple[int, float], float] = field(default_factory=dict)

    @property
    def cpu_seconds(self) -> float:
        return round(sum(self.cpu_by_pid.values()), 3)


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None
    """None when the command was killed for a timeout or an output flood, or never started."""
    timed_out: bool
    output_capped: bool
    stdout: bytes
    stderr: bytes
    elapsed_ms: int
    peak_rss_bytes: int
    cpu_seconds: float
    strays_killed: int
    start_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


async def run_command(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    clock: Clock,
    output_cap: int,
    stdin: bytes | None = None,
    sandbox: Sandbox | None = None,
) -> CommandResult:
    """Run `argv` to completion, timeout or cancellation, leaving no process of it behind.

    With a `sandbox`, bubblewrap runs it (the tree the walker sees starts at bubblewrap)."""
    started = clock.monotonic()
    marker = env[MARKER_ENV]
    fds: tuple[int, ...] = ()
    helper = sandbox.program if sandbox is not None else None
    if sandbox is not None:
        fds = (args_fd(sandbox.args_bytes(argv, cwd)),)
        argv = sandbox.argv(argv, fds[0])
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            preexec_fn=die_with_parent,
            pass_fds=fds,
        )
    except OSError as error:
        return CommandResult(None, False, False, b"", str(error).encode(), 0, 0, 0.0, 0, str(error))
    finally:
        for fd in fds:
            os.close(fd)
    usage = Usage()
    flooded = asyncio.Event()
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err = bytearray(), bytearray()
    readers = [
        asyncio.create_task(_read_capped(proc.stdout, out, output_cap, flooded)),
        asyncio.create_task(_read_capped(proc.stderr, err, output_cap, flooded)),
    ]
    feeder = asyncio.create_task(_feed(proc, stdin))
    sampler = asyncio.create_task(_sample(proc.pid, usage, clock))
    reaped = asyncio.create_task(proc.wait())
    timed_out = False
    strays = 0
    try:
        timed_out = await _wait(proc, timeout_s, flooded, clock)
        if timed_out or flooded.is_set():
            await _kill_tree(proc.pid, clock)
        strays = await _kill_leftovers(proc.pid, marker, clock, helper)
        # A process that escaped every kill may still hold a pipe: keep what was read by then.
        await asyncio.wait([*readers, reaped], timeout=KILL_GRACE_S)
    except BaseException:
        with contextlib.suppress(Exception):
            await asyncio.shield(_kill_tree(proc.pid, clock))
            await asyncio.shield(_kill_leftovers(proc.pid, marker, clock, helper))
        raise
    finally:
        for task in (sampler, feeder, reaped, *readers):
            task.cancel()
        await asyncio.gather(sampler, feeder, reaped, *readers, return_exceptions=True)
    killed = timed_out or flooded.is_set()
    return CommandResult(
        exit_code=None if killed else proc.returncode,
        timed_out=timed_out,
        output_capped=flooded.is_set(),
        stdout=bytes(out),
        stderr=bytes(err),
        elapsed_ms=round((clock.monotonic() - started) * 1000),
        peak_rss_bytes=usage.peak_rss_bytes,
        cpu_seconds=usage.cpu_seconds,
        strays_killed=strays,
    )


async def _wait(
    proc: asyncio.subprocess.Process, timeout_s: float, flooded: asyncio.Event, clock: Clock
) -> bool:
    """Wait for exit, a flood or the deadline; True when the deadline came first."""
    exited = asyncio.create_task(wait_for_exit(proc.pid))
    flood = asyncio.create_task(flooded.wait())
    deadline = asyncio.create_task(clock.sleep(timeout_s))
    try:
        done, _ = await asyncio.wait({exited, flood, deadline}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (exited, flood, deadline):
            task.cancel()
        await asyncio.gather(exited, flood, deadline, return_exceptions=True)
    return deadline in done and exited not in done and flood not in done


async def _kill_tree(pid: int, clock: Clock) -> None:
    """SIGTERM the command's group and every descendant the walker sees; SIGKILL after the grace.

    Members are signalled one by one (psutil checks each is still the same process), never with
    `killpg`: once a group is empty its id can be handed to a new session on a busy machine.
    """
    info = await asyncio.to_thread(ProcessWalker().tree, pid)
    pids = {p.pid for p in info.walk()} if info is not None else set()
    await kill_processes(sorted(pids | set(group_pids(pid))), grace_s=KILL_GRACE_S, clock=clock)


async def _kill_leftovers(pid: int, marker: str, clock: Clock, helper: str | None) -> int:
    """Kill what outlived the command: its group's members and anything carrying its marker.

    The count leaves out `helper` processes (a sandbox's init, waiting on what it holds)."""
    marked = await asyncio.to_thread(find_by_environ, MARKER_ENV, marker)
    leftovers = (set(group_pids(pid)) | set(marked)) - {pid}
    alive = [p for p in sorted(leftovers) if is_live(p)]
    if not alive:
        return 0
    strays = [p for p in alive if _is_stray(p, helper)]
    log.info("lab_strays_killed", pids=alive, strays=_described(strays), attempt=marker)
    await kill_processes(alive, grace_s=KILL_GRACE_S, clock=clock)
    return len(strays)


def _is_stray(pid: int, helper: str | None) -> bool:
    """A process still running that is not the `helper`, known by its name (the kernel's, which
    outlives the command line: read as the sandbox's init ends, its argv may come back empty).
    One that ends, or turns zombie, as it is looked at was no stray."""
    try:
        process = psutil.Process(pid)
        name = process.name()
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
    except psutil.Error:
        return False
    return helper is None or name != os.path.basename(helper)[:15]


def _described(pids: list[int]) -> list[str]:
    """`pid name` of each process, for the log (a name read as the process ends is `?`)."""
    described = []
    for pid in pids:
        try:
            described.append(f"{pid} {psutil.Process(pid).name()}")
        except psutil.Error:
            described.append(f"{pid} ?")
    return described


async def _feed(proc: asyncio.subprocess.Process, data: bytes | None) -> None:
    if proc.stdin is None or data is None:
        return
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        if eventloop.write_to_pipe(proc.stdin, data):  # a command may exit without reading it
            await proc.stdin.drain()
    proc.stdin.close()


async def _read_capped(
    stream: asyncio.StreamReader, kept: bytearray, cap: int, flooded: asyncio.Event
) -> None:
    """Keep the first `cap` bytes in `kept`; more than that sets `flooded` and keeps draining."""
    while chunk := await stream.read(65536):
        room = cap - len(kept)
        if room > 0:
            kept += chunk[:room]
        if len(chunk) > room:
            flooded.set()


async def _sample(pid: int, usage: Usage, clock: Clock) -> None:
    walker = ProcessWalker()
    while True:
        info = await asyncio.to_thread(walker.tree, pid)
        if info is None:
            return
        nodes = list(info.walk())
        usage.peak_rss_bytes = max(usage.peak_rss_bytes, sum(n.rss for n in nodes))
        for node in nodes:
            key = (node.pid, node.started)
            usage.cpu_by_pid[key] = max(usage.cpu_by_pid.get(key, 0.0), node.cpu_seconds)
        await clock.sleep(SAMPLE_S)
