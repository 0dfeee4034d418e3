"""The process-tree walker: what runs under a pid, a process group or a session, at what cost.

Shared by the Lab (every attempt's tree: peak RSS, CPU seconds, strays, kill on timeout or cancel)
and the seats' process views. One `ProcessWalker` keeps psutil's handles between walks, so
`cpu_percent` is the share since the previous walk; a first walk reports 0.0.

Descendants are found by parent links, whatever session or group they moved to, so a child that
called `setsid()` is still attributed to the tree it came from (`own_session` marks it). A process
whose parent already exited is reparented and no longer linked; `find_by_environ` finds those by a
marker variable the caller put in the environment of everything it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import psutil

from forge.clock import SYSTEM_CLOCK, Clock

_ATTRS = [
    "pid",
    "ppid",
    "name",
    "cmdline",
    "status",
    "create_time",
    "memory_info",
    "cpu_times",
    "cpu_percent",
]

KILL_POLL_S = 0.02
"""How often `kill_processes` looks whether its SIGTERMed targets are gone."""


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    ppid: int
    name: str
    cmdline: tuple[str, ...]
    status: str
    cpu_percent: float
    """CPU share since this walker's previous walk (100.0 = one core); 0.0 on the first."""
    cpu_seconds: float
    """User plus system CPU time consumed so far."""
    rss: int
    started: float
    """Creation time, seconds since the epoch."""
    pgid: int
    sid: int
    own_session: bool
    """True when its session differs from its parent's in this tree (it called setsid)."""
    children: tuple[ProcessInfo, ...]

    def walk(self) -> Iterator[ProcessInfo]:
        """This process and every descendant, parents first."""
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True)
class _Row:
    pid: int
    ppid: int
    name: str
    cmdline: tuple[str, ...]
    status: str
    cpu_percent: float
    cpu_seconds: float
    rss: int
    started: float
    pgid: int
    sid: int


class ProcessWalker:
    """Walks the process table; reuse one instance so CPU shares compare consecutive walks."""

    def tree(self, root_pid: int) -> ProcessInfo | None:
        """The process `root_pid` and all its descendants, or None if it is gone."""
        rows = self._table()
        if root_pid not in rows:
            return None
        return _build(rows[root_pid], rows, _children_index(rows), parent_sid=None)

    def group(self, pgid: int) -> list[ProcessInfo]:
        """Every process of group `pgid`, as trees rooted at members whose parent is outside it."""
        return self._forest(lambda row: row.pgid == pgid)

    def session(self, sid: int) -> list[ProcessInfo]:
        """Every process of session `sid`, plus descendants that moved to a session of their own."""
        return self._forest(lambda row: row.sid == sid)

    def _forest(self, member: Callable[[_Row], bool]) -> list[ProcessInfo]:
        rows = self._table()
        index = _children_index(rows)
        roots = [
            row
            for row in rows.values()
            if member(row) and not (row.ppid in rows and member(rows[row.ppid]))
        ]
        return [_build(row, rows, index, parent_sid=None) for row in sorted(roots, key=_pid)]

    def _table(self) -> dict[int, _Row]:
        rows: dict[int, _Row] = {}
        for proc in psutil.process_iter(_ATTRS):
            info = proc.info
            try:
                pgid, sid = os.getpgid(info["pid"]), os.getsid(info["pid"])
            except (ProcessLookupError, PermissionError):
                continue
            cpu = info["cpu_times"]
            memory = info["memory_info"]
            rows[info["pid"]] = _Row(
                pid=info["pid"],
                ppid=info["ppid"] or 0,
                name=info["name"] or "",
                cmdline=tuple(info["cmdline"] or ()),
                status=info["status"] or "",
                cpu_percent=float(info["cpu_percent"] or 0.0),
                cpu_seconds=(cpu.user + cpu.system) if cpu is not None else 0.0,
                rss=memory.rss if memory is not None else 0,
                started=info["create_time"] or 0.0,
                pgid=pgid,
                sid=sid,
            )
        return rows


def _pid(row: _Row) -> int:
    return row.pid


def _children_index(rows: dict[int, _Row]) -> dict[int, list[_Row]]:
    index: dict[int, list[_Row]] = {}
    for row in rows.values():
        if row.ppid != row.pid:
            index.setdefault(row.ppid, []).append(row)
    return index


def _build(
    row: _Row, rows: dict[int, _Row], index: dict[int, list[_Row]], parent_sid: int | None
) -> ProcessInfo:
    children = tuple(
        _build(child, rows, index, row.sid) for child in sorted(index.get(row.pid, []), key=_pid)
    )
    return ProcessInfo(
        pid=row.pid,
        ppid=row.ppid,
        name=row.name,
        cmdline=row.cmdline,
        status=row.status,
        cpu_percent=row.cpu_percent,
        cpu_seconds=row.cpu_seconds,
        rss=row.rss,
        started=row.started,
        pgid=row.pgid,
        sid=row.sid,
        own_session=parent_sid is not None and row.sid != parent_sid,
        children=children,
    )


def find_by_environ(name: str, value: str) -> list[int]:
    """Pids of this user's processes whose environment holds `name=value` (ours excluded)."""
    wanted = f"{name}={value}".encode()
    found: list[int] = []
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if wanted in environ.split(b"\0"):
            found.append(int(entry.name))
    return sorted(found)


def group_pids(pgid: int) -> list[int]:
    """Pids in process group `pgid`, read straight from /proc (cheaper than a full walk)."""
    members = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.getpgid(int(entry.name)) == pgid:
                    members.append(int(entry.name))
    return sorted(members)


def is_live(pid: int) -> bool:
    """True while `pid` exists and is neither a zombie nor dead."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


async def wait_for_exit(pid: int) -> None:
    """Return once `pid` has exited (zombie or reaped), without reaping it.

    A pidfd on the event loop: unlike `asyncio.subprocess.Process.wait()`, which also waits for
    the child's pipes to close, this returns even while an escaped grandchild holds them open.
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[None] = loop.create_future()
    loop.add_reader(fd, _settle, exited)
    try:
        await exited
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def kill_processes(
    pids: Iterable[int], *, grace_s: float = 2.0, clock: Clock = SYSTEM_CLOCK
) -> list[int]:
    """SIGTERM each process, SIGKILL what is still alive after `grace_s`; return who was signalled.

    Never waits on a process (that would steal a child's exit status from its owner); it polls
    until each target is gone or a zombie.
    """
    targets: list[psutil.Process] = []
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            proc.send_signal(signal.SIGTERM)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        targets.append(proc)
    deadline = clock.monotonic() + grace_s
    while clock.monotonic() < deadline and any(_alive(p) for p in targets):
        await clock.sleep(KILL_POLL_S)
    for proc in targets:
        if _alive(proc):
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.send_signal(signal.SIGKILL)
    return [p.pid for p in targets]


def _alive(proc: psutil.Process) -> bool:
    """`is_live`, and still the same process (pids get reused)."""
    return proc.is_running() and is_live(proc.pid)
