"""Run one attempt command (harness, setup, check) as a watched, killable process tree.

Each command starts in its own session and dies with the process that started it (a runner
killed mid-attempt takes its commands along). With the attempt's `Bounds` it runs in a group of
its own, bounded in processes, memory, disk written and open files (`forge.attempt.limits`). A
walker samples its tree for peak RSS and CPU. On timeout, cancellation, an output flood or a limit
reached the whole tree gets SIGTERM, then SIGKILL after a grace.

After every command, whatever outlived it is killed and counted as a stray: what is left in its
process group or its cgroup, carries the attempt's marker variable, or descends from any of those
(a sandbox's init holds everything its namespace still runs, whatever its environment or session).
The sandbox's init itself, known as the init of a PID namespace one level below forge's, is killed
last and never counted: killing it first would take its namespace down uncounted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from forge import eventloop
from forge.attempt.limits import Bounds, CommandBounds, Limit, Mechanism
from forge.attempt.sandbox import PRIVATE_TMP, Sandbox, args_fd
from forge.clock import Clock
from forge.ipc.orphans import die_with_parent
from forge.logs import get_logger
from forge.procs import (
    KILL_POLL_S,
    ProcessWalker,
    descendants,
    find_by_environ,
    group_pids,
    is_live,
    kill_processes,
    namespace_pids,
    wait_for_exit,
)

KILL_GRACE_S = 2.0
"""SIGTERM, then SIGKILL this long after (acceptance table A5)."""
SAMPLE_S = 0.2
"""How often the walker samples a running command's tree."""
MARKER_ENV = "FORGE_ATTEMPT_ID"
"""Every process an attempt starts carries this variable; strays are found by it."""
SWEEP_ROUNDS = 5
"""How many times the sweep looks again for leftovers started while it killed the last ones."""
LOGGED_STRAYS = 20
"""How many strays `lab_strays_killed` names (a fork bomb leaves hundreds)."""

log = get_logger(__name__)

Sink = Callable[[bytes], None]
"""Takes each chunk of a command's stream as it is read (the recipe's transcript)."""


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
    """None when the command was killed for a timeout, an output flood, a cut or a limit
    reached, or never started."""
    timed_out: bool
    output_capped: bool
    stdout: bytes
    stderr: bytes
    elapsed_ms: int
    peak_rss_bytes: int
    cpu_seconds: float
    strays_killed: int
    start_error: str | None = None
    limit: Limit | None = None
    """The bound the command reached (`pids`, `memory`, `disk`), which ended it."""
    bounded_by: Mechanism | None = None
    """How its bounds held (`cgroup2`, `cgroup1`, `rlimit`); None when it ran without bounds."""
    cut_off: bool = False
    """Its `watch` cut it off (an agent over its budget)."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.limit is None


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
    bounds: Bounds | None = None,
    tee: tuple[Sink, Sink] | None = None,
    watch: Callable[[bytes], bool] | None = None,
) -> CommandResult:
    """Run `argv` to completion, timeout, a limit or cancellation, leaving no process of it behind.

    With a `sandbox`, bubblewrap runs it (the tree the walker sees starts at bubblewrap); with
    `bounds`, the attempt's limits bound it; with `tee`, every chunk of its stdout and stderr
    (past the cap too) is also handed to the two sinks as it is read; `watch` reads its stdout
    as it comes and cuts it off (its whole tree, like a timeout) once it returns True."""
    started = clock.monotonic()
    marker = env[MARKER_ENV]
    bounded = (
        await bounds.command(tmpfs=PRIVATE_TMP if sandbox is not None else ())
        if bounds is not None
        else None
    )
    fds: tuple[int, ...] = ()
    if sandbox is not None:
        fds = (args_fd(sandbox.args_bytes(argv, cwd)),)
        argv = sandbox.argv(argv, fds[0])
    try:
        if bounded is not None:
            bounded.open()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_preexec(bounded),
            pass_fds=fds,
        )
    except (OSError, subprocess.SubprocessError) as error:
        if bounded is not None:
            await bounded.close(clock)
        why = str(error)
        return CommandResult(None, False, False, b"", why.encode(), 0, 0, 0.0, 0, why)
    finally:
        for fd in fds:
            os.close(fd)
        if bounded is not None:
            bounded.opened()
    usage = Usage()
    flooded, cut = asyncio.Event(), asyncio.Event()
    assert proc.stdout is not None
    assert proc.stderr is not None
    out, err = bytearray(), bytearray()
    sinks: tuple[Sink | None, Sink | None] = tee if tee is not None else (None, None)
    readers = [
        asyncio.create_task(
            _read_capped(proc.stdout, out, output_cap, flooded, sinks[0], watch, cut)
        ),
        asyncio.create_task(_read_capped(proc.stderr, err, output_cap, flooded, sinks[1])),
    ]
    feeder = asyncio.create_task(_feed(proc, stdin))
    sampler = asyncio.create_task(_sample(proc.pid, usage, clock))
    watcher = asyncio.create_task(_watch(bounded, proc.pid, clock))
    reaped = asyncio.create_task(proc.wait())
    helpers = [sampler, feeder, watcher, reaped, *readers]
    members = bounded.members if bounded is not None else set
    sandboxed = sandbox is not None
    timed_out = False
    strays = 0
    limit: Limit | None = None
    try:
        timed_out = await _wait(proc, timeout_s, flooded, cut, watcher, clock)
        stopped = timed_out or flooded.is_set() or cut.is_set() or watcher.done()
        if stopped:  # a limit reached is no time for a grace: a fork bomb would use it
            await _kill_tree(proc.pid, clock, grace_s=0 if watcher.done() else KILL_GRACE_S)
        watcher.cancel()
        strays = await _kill_leftovers(proc.pid, marker, clock, sandboxed, members)
        if bounded is not None:  # after the sweep: a limit its leftovers reached counts too
            limit = await bounded.settle(proc.pid)
        # A process that escaped every kill may still hold a pipe: keep what was read by then.
        await asyncio.wait([*readers, reaped], timeout=KILL_GRACE_S)
    except BaseException:
        with contextlib.suppress(Exception):
            await asyncio.shield(_kill_tree(proc.pid, clock))
            await asyncio.shield(_kill_leftovers(proc.pid, marker, clock, sandboxed, members))
        raise
    finally:
        for task in helpers:
            task.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)
        if bounded is not None:
            await asyncio.shield(bounded.close(clock))
    return CommandResult(
        exit_code=None if stopped else proc.returncode,
        timed_out=timed_out,
        output_capped=flooded.is_set(),
        stdout=bytes(out),
        stderr=bytes(err),
        elapsed_ms=round((clock.monotonic() - started) * 1000),
        peak_rss_bytes=usage.peak_rss_bytes,
        cpu_seconds=usage.cpu_seconds,
        strays_killed=strays,
        limit=limit,
        bounded_by=bounded.mechanism if bounded is not None else None,
        cut_off=cut.is_set(),
    )


def _preexec(bounded: CommandBounds | None) -> Callable[[], None]:
    """What the child runs before exec: die with its parent, join its groups, take its rlimits."""

    def start() -> None:
        die_with_parent()
        if bounded is not None:
            bounded.enter()

    return start


async def _watch(bounded: CommandBounds | None, pid: int, clock: Clock) -> Limit:
    """The limit the command reaches. Without bounds, or once the watch itself failed (the groups
    and rlimits still hold), it never returns."""
    if bounded is not None:
        try:
            return await bounded.watch(pid, clock)
        except Exception:
            log.exception("lab_limits_watch_failed")
    never: asyncio.Future[Limit] = asyncio.get_running_loop().create_future()
    return await never


async def _wait(
    proc: asyncio.subprocess.Process,
    timeout_s: float,
    flooded: asyncio.Event,
    cut: asyncio.Event,
    watcher: asyncio.Task[Limit],
    clock: Clock,
) -> bool:
    """Wait for exit, a flood, a cut, a limit or the deadline; True when the deadline came
    first."""
    exited = asyncio.create_task(wait_for_exit(proc.pid))
    flood = asyncio.create_task(flooded.wait())
    cutting = asyncio.create_task(cut.wait())
    deadline = asyncio.create_task(clock.sleep(timeout_s))
    ours = (exited, flood, cutting, deadline)
    try:
        done, _ = await asyncio.wait({*ours, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in ours:
            task.cancel()
        await asyncio.gather(*ours, return_exceptions=True)
    return deadline in done and not done & {exited, flood, cutting, watcher}


async def _kill_tree(pid: int, clock: Clock, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM the command's group and every descendant the walker sees; SIGKILL after the grace.

    Members are signalled one by one (psutil checks each is still the same process), never with
    `killpg`: once a group is empty its id can be handed to a new session on a busy machine.
    """
    info = await asyncio.to_thread(ProcessWalker().tree, pid)
    pids = {p.pid for p in info.walk()} if info is not None else set()
    targets = sorted(pids | set(group_pids(pid)))
    await kill_processes(targets, grace_s=grace_s, clock=clock, settle_s=KILL_GRACE_S)


async def _kill_leftovers(
    pid: int, marker: str, clock: Clock, sandboxed: bool, members: Callable[[], set[int]]
) -> int:
    """Kill what outlived the command; return how many strays were killed (a sandbox's init, a
    helper, is none). Each sandbox init is SIGKILLed as soon as its namespace's processes are
    listed: its death takes the namespace down at once, so a fork bomb cannot outrun the sweep,
    and each listed process gone after it was killed. Strays outside a namespace get SIGTERM, then
    SIGKILL after the grace. What started meanwhile is looked for again."""
    killed: set[int] = set()
    named: list[str] = []
    for _ in range(SWEEP_ROUNDS):
        left = await asyncio.to_thread(_leftovers, pid, marker, members, sandboxed)
        if not (left.inits or left.inside or left.outside):
            break
        named += _described(sorted(left.inside | set(left.outside))[: LOGGED_STRAYS - len(named)])
        if left.inits:
            killed |= await _kill_namespaces(left.inits, left.inside, clock)
        killed.update(await kill_processes(left.outside, grace_s=KILL_GRACE_S, clock=clock))
    if killed:
        log.info("lab_strays_killed", count=len(killed), strays=named, attempt=marker)
    return len(killed)


@dataclass(frozen=True)
class _Leftovers:
    inits: list[int]
    """Sandbox inits (helpers, never counted)."""
    inside: set[int]
    """Processes running in their namespaces."""
    outside: list[int]


def _leftovers(
    pid: int, marker: str, members: Callable[[], set[int]], sandboxed: bool
) -> _Leftovers:
    """The running processes of the command's group, cgroup or marker, with their descendants."""
    found = set(group_pids(pid)) | set(find_by_environ(MARKER_ENV, marker)) | members()
    for root in list(found):
        found.update(descendants(root))
    found.discard(pid)
    alive = {p for p in found if is_live(p)}
    inits = sorted(p for p in alive if sandboxed and _is_sandbox_init(p))
    inside = {child for init in inits for child in descendants(init)} & alive
    return _Leftovers(inits, inside, sorted(alive - inside - set(inits)))


async def _kill_namespaces(inits: list[int], inside: set[int], clock: Clock) -> set[int]:
    """SIGKILL the sandbox inits (an init ignores SIGTERM) and return which of the processes
    listed `inside` their namespaces are gone after it."""
    await kill_processes(inits, grace_s=0, clock=clock, settle_s=KILL_GRACE_S)
    deadline = clock.monotonic() + KILL_GRACE_S
    while any(is_live(p) for p in inside) and clock.monotonic() < deadline:
        await clock.sleep(KILL_POLL_S)
    return {p for p in inside if not is_live(p)}


def _is_sandbox_init(pid: int) -> bool:
    """The init of a PID namespace one level below forge's: bubblewrap's, holding the sandbox
    (one the recipe made would sit deeper). Known by the kernel, not by a name a stray can take."""
    mine, theirs = namespace_pids(os.getpid()), namespace_pids(pid)
    return len(theirs) == len(mine) + 1 and theirs[-1] == 1


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
    stream: asyncio.StreamReader,
    kept: bytearray,
    cap: int,
    flooded: asyncio.Event,
    sink: Sink | None,
    watch: Callable[[bytes], bool] | None = None,
    cut: asyncio.Event | None = None,
) -> None:
    """Keep the first `cap` bytes in `kept`; more than that sets `flooded` and keeps draining.
    Every chunk also goes to `sink`, when there is one, and to `watch`, which sets `cut` by
    returning True."""
    while chunk := await stream.read(65536):
        if sink is not None:
            sink(chunk)
        room = cap - len(kept)
        if room > 0:
            kept += chunk[:room]
        if len(chunk) > room:
            flooded.set()
        if watch is not None and cut is not None and watch(chunk):
            cut.set()


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
