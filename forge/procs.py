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
import collections
import contextlib
import functools
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import psutil

from forge.children import ExitWatch
from forge.clock import SYSTEM_CLOCK, Clock

_DETAILS = [
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
class _Link:
    """Where a process sits (parent, group, session): cheap to read for every process."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    proc: psutil.Process


class ProcessWalker:
    """Walks the process table; reuse one instance so CPU shares compare consecutive walks.

    Every walk reads only the links (parent, group, session) of all processes, then the details
    (command line, memory, CPU) of the processes it returns.
    """

    def __init__(self) -> None:
        self._tree_processes: dict[int, psutil.Process] = {}

    def tree(self, root_pid: int) -> ProcessInfo | None:
        """The process `root_pid` and all its descendants, or None if it is gone.

        Found through the kernel's lists of each process's children where /proc has them, so
        a walk costs the tree's size, not the machine's (the Lab samples every attempt's tree
        five times a second); through the whole table elsewhere."""
        links = self._tree_links(root_pid) if _children_listed() else _links()
        if root_pid not in links:
            return None
        built = _build(links[root_pid], _children_index(links), parent_sid=None)
        return built[0] if built and built[0].pid == root_pid else None

    def group(self, pgid: int) -> list[ProcessInfo]:
        """Every process of group `pgid`, as trees rooted at members whose parent is outside it."""
        return self._forest(lambda link: link.pgid == pgid)

    def session(self, sid: int) -> list[ProcessInfo]:
        """Every process of session `sid`, plus descendants that moved to a session of their own."""
        return self._forest(lambda link: link.sid == sid)

    def _tree_links(self, root_pid: int) -> dict[int, _Link]:
        """The links of `root_pid` and its descendants, read down the children lists. Each
        process's psutil handle is kept while it lives, so `cpu_percent` spans two walks."""
        links: dict[int, _Link] = {}
        pending = [root_pid]
        while pending:
            pid = pending.pop()
            try:
                proc = self._tree_process(pid)
                links[pid] = _Link(pid, proc.ppid(), os.getpgid(pid), os.getsid(pid), proc)
            except (psutil.Error, ProcessLookupError, PermissionError):
                continue
            pending.extend(_children_of(pid))
        self._tree_processes = {pid: link.proc for pid, link in links.items()}
        return links

    def _tree_process(self, pid: int) -> psutil.Process:
        known = self._tree_processes.get(pid)
        if known is not None and known.is_running():
            return known
        return psutil.Process(pid)

    def _forest(self, member: Callable[[_Link], bool]) -> list[ProcessInfo]:
        links = _links()
        index = _children_index(links)
        roots = [
            link
            for link in links.values()
            if member(link) and not (link.ppid in links and member(links[link.ppid]))
        ]
        return [info for link in sorted(roots, key=_pid) for info in _build(link, index, None)]


def _links() -> dict[int, _Link]:
    links: dict[int, _Link] = {}
    # process_iter keeps its Process objects between calls, so cpu_percent has a baseline.
    for proc in psutil.process_iter(["ppid"]):
        try:
            pgid, sid = os.getpgid(proc.pid), os.getsid(proc.pid)
        except (ProcessLookupError, PermissionError):
            continue
        links[proc.pid] = _Link(proc.pid, proc.info["ppid"] or 0, pgid, sid, proc)
    return links


@functools.cache
def _children_listed() -> bool:
    """Whether this kernel lists each thread's children (`/proc/<pid>/task/<tid>/children`,
    CONFIG_PROC_CHILDREN, on in the common distributions' kernels)."""
    me = os.getpid()
    return os.path.exists(f"/proc/{me}/task/{me}/children")


def _children_of(pid: int) -> list[int]:
    """The children of every thread of `pid` (a child's parent is the thread that forked it);
    none for a process gone meanwhile."""
    children: list[int] = []
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        for task in os.scandir(f"/proc/{pid}/task"):
            with (
                contextlib.suppress(FileNotFoundError, ProcessLookupError),
                open(f"{task.path}/children", encoding="ascii") as listed,
            ):
                children.extend(int(child) for child in listed.read().split())
    return children


def _pid(link: _Link) -> int:
    return link.pid


def _children_index(links: dict[int, _Link]) -> dict[int, list[_Link]]:
    index: dict[int, list[_Link]] = {}
    for link in links.values():
        if link.ppid != link.pid:
            index.setdefault(link.ppid, []).append(link)
    return index


def _build(
    link: _Link, index: dict[int, list[_Link]], parent_sid: int | None
) -> tuple[ProcessInfo, ...]:
    """The process as a tree; a process that exited since the table was read is left out and
    its children take its place (they still run, and a session's close must still find them)."""
    children = tuple(
        info
        for child in sorted(index.get(link.pid, []), key=_pid)
        for info in _build(child, index, link.sid)
    )
    try:
        info = link.proc.as_dict(_DETAILS)
    except psutil.NoSuchProcess:
        return children
    cpu = info["cpu_times"]
    memory = info["memory_info"]
    return (
        ProcessInfo(
            pid=link.pid,
            ppid=link.ppid,
            name=info["name"] or "",
            cmdline=tuple(info["cmdline"] or ()),
            status=info["status"] or "",
            cpu_percent=float(info["cpu_percent"] or 0.0),
            cpu_seconds=(cpu.user + cpu.system) if cpu is not None else 0.0,
            rss=memory.rss if memory is not None else 0,
            started=info["create_time"] or 0.0,
            pgid=link.pgid,
            sid=link.sid,
            own_session=parent_sid is not None and link.sid != parent_sid,
            children=children,
        ),
    )


def descendants(pid: int, at_most: int | None = None) -> list[int]:
    """Pids under `pid` by parent links, nearest first; no more than `at_most` of them (a bound
    counting a fork bomb's tree reads only as far as it needs)."""
    children: Callable[[int], list[int]] = _children_of
    if not _children_listed():
        index = _children_index(_links())

        def children(parent: int) -> list[int]:
            return [link.pid for link in index.get(parent, [])]

    found: list[int] = []
    seen = {pid}
    pending = collections.deque(children(pid))
    while pending and (at_most is None or len(found) < at_most):
        child = pending.popleft()
        if child in seen:
            continue
        seen.add(child)
        found.append(child)
        pending.extend(children(child))
    return found


def namespace_pids(pid: int) -> tuple[int, ...]:
    """`pid`'s number in each PID namespace it is in, this /proc's namespace first (`NSpid`);
    empty once it is gone. The init of a namespace made below ours has one number more than we
    do, the last being 1."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("NSpid:"):
                    return tuple(int(number) for number in line.split()[1:])
    except OSError:
        return ()
    return ()


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

    A `forge.children.ExitWatch`: unlike `asyncio.subprocess.Process.wait()`, which also waits
    for the child's pipes to close, this returns even while an escaped grandchild holds them.
    """
    exited: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    try:
        watch = ExitWatch(pid, lambda: exited.set_result(None))
    except ProcessLookupError:
        return
    try:
        await exited
    finally:
        watch.close()


async def kill_processes(
    pids: Iterable[int],
    *,
    grace_s: float = 2.0,
    clock: Clock = SYSTEM_CLOCK,
    settle_s: float | None = None,
) -> list[int]:
    """SIGTERM each process, SIGKILL what is still alive after `grace_s`; return who was signalled
    once every target is gone or a zombie (a SIGKILLed process on a loaded machine may run on for
    a moment: a caller counting what outlived it must not find it), or `settle_s` (by default
    `grace_s`) passed.

    Never waits on a process (that would steal a child's exit status from its owner); it polls.
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
    killed = [proc for proc in targets if _alive(proc)]
    for proc in killed:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.send_signal(signal.SIGKILL)
    deadline = clock.monotonic() + (grace_s if settle_s is None else settle_s)
    while killed and clock.monotonic() < deadline and any(_alive(p) for p in killed):
        await clock.sleep(KILL_POLL_S)
    return [p.pid for p in targets]


def _alive(proc: psutil.Process) -> bool:
    """`is_live`, and still the same process (pids get reused)."""
    return proc.is_running() and is_live(proc.pid)
