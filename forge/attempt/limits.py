"""Bounds on one attempt: how many processes, how much memory, disk written and open files.

A recipe is untrusted code: a fork bomb, a memory hog or a disk filler must end as the attempt's
outcome naming the limit (`resource-limit: pids`) while the host and the sibling attempts carry
on. Each command is bounded by the first mechanism that works here, in this order, and its result
names the one that held:

- `cgroup2`: a cgroup v2 group per command (`pids.max`, `memory.max`, `memory.swap.max` 0) under
  the group this process runs in, where the pids and memory controllers are delegated to it (the
  process first moves into a leaf of its own: a group handing controllers down holds no process);
- `cgroup1`: a group in each of the v1 `pids` and `memory` hierarchies, under this process's own
  (`memory.memsw.limit_in_bytes` too where swap is accounted), where it may make them (as root);
- `rlimit`: RLIMIT_DATA (memory, per process) and a watch of the command's tree that kills it once
  it counts `pids` processes or `memory` bytes resident. RLIMIT_NPROC is no bound here: it counts
  every process of the user, bubblewrap cannot make its namespaces under a low one, and root is
  exempt from it. A fork bomb faster than the watch's sampling can pass the bound before it ends.

A command joins its groups between fork and exec, so everything it starts, however it detaches,
is inside. Every mechanism also sets RLIMIT_NOFILE (open files: an open past it fails inside with
EMFILE, which the kernel reports to no one, so no outcome names it), RLIMIT_FSIZE (no file past the
disk bound: a write past it kills the writer with SIGXFSZ) and RLIMIT_CORE 0 (no core dumps), and
watches the disk written: how much the attempt's writable trees grew since its first command, plus
what the sandbox's private scratch directories (tmpfs) hold.

A limit reached ends the command: the cgroup limits are read from their groups' event counters
(`pids.events` max, the memory OOM kills), the others from the watch.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import os
import re
import resource
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import msgspec
import psutil

from forge.clock import Clock
from forge.logs import get_logger
from forge.procs import descendants

Mechanism = Literal["cgroup2", "cgroup1", "rlimit"]
PREFERENCE: tuple[Mechanism, ...] = ("cgroup2", "cgroup1", "rlimit")
Limit = Literal["pids", "memory", "disk"]
"""What a result can name; open files are bounded but never named (see the module's docstring)."""

MIB = 1024 * 1024
DEFAULT_PIDS = 1024
DEFAULT_MEMORY_MIB = 4096
DEFAULT_DISK_MIB = 4096
DEFAULT_OPEN_FILES = 4096
WATCH_S = 0.2
"""How often a running command's groups (or, under rlimits, its tree) are looked at."""
DISK_WATCH_S = 1.0
"""How often, at least, its disk written is measured; less often when a walk takes long."""
DISK_WATCH_SHARE = 10
"""A walk of the trees is repeated no sooner than this many times its own duration."""
REMOVE_S = 2.0
"""How long removing a group waits for its last members to be gone."""
CONTROLLERS = ("pids", "memory")
GROUP_PREFIX = "forge-"
_NAMED = re.compile(r"forge-(\d+)-")

log = get_logger(__name__)


class Limits(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What one attempt may use at a time (`[lab]` in forge.toml; docs/config.md); plain data
    that travels with an attempt to its runner."""

    pids: int = DEFAULT_PIDS
    """Processes and threads."""
    memory_bytes: int = DEFAULT_MEMORY_MIB * MIB
    disk_bytes: int = DEFAULT_DISK_MIB * MIB
    """Disk written: the growth of the attempt's writable trees, plus its private scratch."""
    open_files: int = DEFAULT_OPEN_FILES
    """Open file descriptors per process."""


def sized_tmpfs(directory: str, size_bytes: int) -> list[str]:
    """bubblewrap arguments for a private scratch `directory` of at most `size_bytes` (the disk
    bound: what it holds counts as written); bubblewrap 0.5 and later."""
    return ["--size", str(size_bytes), "--tmpfs", directory]


# -- reading the kernel's files (pure) ---------------------------------------------------------


def cgroup_paths(text: str) -> dict[str, str]:
    """`/proc/<pid>/cgroup` as {controller: path}; the v2 hierarchy's path under ``."""
    paths: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def cgroup_mounts(mounts: Iterable[tuple[str, str, str]]) -> dict[str, Path]:
    """Where each hierarchy is mounted, from (mount point, type, options) rows: `` for cgroup2,
    a controller's name for the v1 hierarchy holding it; the first mount of each wins."""
    found: dict[str, Path] = {}
    for point, kind, options in mounts:
        if kind == "cgroup2":
            found.setdefault("", Path(point))
        elif kind == "cgroup":
            for option in options.split(","):
                if option in CONTROLLERS:
                    found.setdefault(option, Path(point))
    return found


def event_count(text: str, key: str) -> int:
    """The number after `key` in a `key value` events file (`pids.events`, `memory.events`,
    `memory.oom_control`); 0 when absent."""
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def proportional_kib(smaps_rollup: str) -> int:
    """The `Pss:` of a `/proc/<pid>/smaps_rollup`, in KiB; 0 when absent."""
    for line in smaps_rollup.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def capped(wanted: int, hard: int) -> int:
    """`wanted`, lowered to a hard limit the process cannot raise (RLIM_INFINITY: none)."""
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


# -- groups ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """One command's cgroup (v2), or its pair of groups (v1: pids, memory)."""

    mechanism: Mechanism
    dirs: tuple[Path, ...]
    pids_events: Path
    oom_events: Path
    """`memory.events` (v2) or `memory.oom_control` (v1): both count OOM kills as `oom_kill`."""

    def procs_files(self) -> list[Path]:
        return [folder / "cgroup.procs" for folder in self.dirs]

    def members(self) -> set[int]:
        """The processes in the group (every hierarchy holds the same ones)."""
        with contextlib.suppress(OSError):
            return {int(pid) for pid in (self.dirs[0] / "cgroup.procs").read_text().split()}
        return set()

    def reached(self) -> Limit | None:
        if event_count(_read(self.pids_events), "max") > 0:
            return "pids"
        if event_count(_read(self.oom_events), "oom_kill") > 0:
            return "memory"
        return None

    def remove(self) -> bool:
        """Remove the group; False while it still holds a process."""
        for folder in self.dirs:
            with contextlib.suppress(FileNotFoundError):
                try:
                    folder.rmdir()
                except OSError:
                    return False
        return True


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def make_v2_group(parent: Path, name: str, limits: Limits) -> Group:
    folder = parent / name
    folder.mkdir()
    try:
        (folder / "pids.max").write_text(str(limits.pids))
        (folder / "memory.max").write_text(str(limits.memory_bytes))
        if (folder / "memory.swap.max").exists():
            (folder / "memory.swap.max").write_text("0")
    except OSError:
        folder.rmdir()
        raise
    return Group("cgroup2", (folder,), folder / "pids.events", folder / "memory.events")


def make_v1_group(pids_parent: Path, memory_parent: Path, name: str, limits: Limits) -> Group:
    pids, memory = pids_parent / name, memory_parent / name
    pids.mkdir()
    try:
        memory.mkdir()
    except OSError:
        pids.rmdir()
        raise
    group = Group("cgroup1", (pids, memory), pids / "pids.events", memory / "memory.oom_control")
    try:
        (pids / "pids.max").write_text(str(limits.pids))
        (memory / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
        if (memory / "memory.memsw.limit_in_bytes").exists():  # swap accounted: none beyond
            (memory / "memory.memsw.limit_in_bytes").write_text(str(limits.memory_bytes))
    except OSError:
        group.remove()
        raise
    return group


@dataclass(frozen=True)
class Host:
    """Where this process may make groups, per mechanism, and why not where it may not."""

    v2: Path | None
    v1: tuple[Path, Path] | None
    """The pids and memory hierarchies' parents."""
    why_not: dict[str, str] = field(default_factory=dict)


def find_host(cgroups: str, mounts: Iterable[tuple[str, str, str]]) -> Host:
    """Where this process's own groups are, from its `/proc/self/cgroup` and the mount table.

    Read-only: whether a group can be made there is learned by making one."""
    paths = cgroup_paths(cgroups)
    points = cgroup_mounts(mounts)
    why_not: dict[str, str] = {}
    v2: Path | None = None
    if "" in points and "" in paths:
        v2 = points[""] / paths[""].lstrip("/")
        offered = _read(v2 / "cgroup.controllers").split()
        if not set(CONTROLLERS) <= set(offered):
            why_not["cgroup2"] = f"{v2} is not delegated the pids and memory controllers"
            v2 = None
    else:
        why_not["cgroup2"] = "no cgroup2 hierarchy holds this process"
    v1: tuple[Path, Path] | None = None
    if all(c in points and c in paths for c in CONTROLLERS):
        v1 = (
            points["pids"] / paths["pids"].lstrip("/"),
            points["memory"] / paths["memory"].lstrip("/"),
        )
    else:
        why_not["cgroup1"] = "no cgroup v1 pids and memory hierarchies"
    return Host(v2, v1, why_not)


def _delegated_parent(base: Path) -> None:
    """`base`, ready to hold groups with pids and memory: this process moves into a leaf of its
    own (cgroup v2's no-internal-process rule) and the controllers are enabled for children.

    Raises OSError (this process back where it was) when the group holds other processes."""
    if set(CONTROLLERS) <= set(_read(base / "cgroup.subtree_control").split()):
        return
    leaf = base / f"{GROUP_PREFIX}{os.getpid()}-runner"
    leaf.mkdir(exist_ok=True)
    (leaf / "cgroup.procs").write_text(str(os.getpid()))
    try:
        (base / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in CONTROLLERS))
    except OSError:
        (base / "cgroup.procs").write_text(str(os.getpid()))
        leaf.rmdir()
        raise


def _remove_stale(parent: Path) -> None:
    """Remove the groups a process that is gone left (a runner killed mid-command)."""
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            named = _NAMED.match(entry.name)
            if named and entry.is_dir() and not psutil.pid_exists(int(named.group(1))):
                with contextlib.suppress(OSError):
                    entry.rmdir()


@functools.cache
def this_host() -> Host:
    """This process's host, its v2 group prepared for children if delegated (once a process)."""
    mounts = [(p.mountpoint, p.fstype, p.opts) for p in psutil.disk_partitions(all=True)]
    host = find_host(_read(Path("/proc/self/cgroup")), mounts)
    if host.v2 is not None:
        try:
            _delegated_parent(host.v2)
        except OSError as error:
            why = f"cannot enable pids and memory in {host.v2}: {error.strerror or error}"
            host = Host(None, host.v1, {**host.why_not, "cgroup2": why})
    for parent in [*([host.v2] if host.v2 else []), *(host.v1 or ())]:
        _remove_stale(parent)
    return host


# -- disk written --------------------------------------------------------------------------------


def tree_bytes(roots: Iterable[Path]) -> int:
    """Bytes allocated on disk under `roots`: each inode once, links not followed, a root or an
    entry that is gone counting nothing."""
    seen: set[tuple[int, int]] = set()
    total = 0
    pending = [str(root) for root in roots]
    while pending:
        path = pending.pop()
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if (info.st_dev, info.st_ino) in seen:
            continue
        seen.add((info.st_dev, info.st_ino))
        total += info.st_blocks * 512
        if stat.S_ISDIR(info.st_mode):
            with contextlib.suppress(OSError), os.scandir(path) as entries:
                pending.extend(entry.path for entry in entries)
    return total


def tmpfs_bytes(inside: int, directories: Sequence[str], size_bytes: int) -> int:
    """What the sandbox's private scratch `directories` hold, seen through the root of `inside`
    (a process in the sandbox). A directory counts only once it is one of the sandbox's own
    scratch mounts, known by their size (`size_bytes`, what bubblewrap was told: `sized_tmpfs`)
    on a device the host's directory is not on. While bubblewrap sets up, the path shows other
    filesystems (its own scratch root; the host's root filesystem under the old root), so the
    device and the usage are read from one open directory: a second look by path could land on
    another mount, and counting the host's disk ended sound commands on a `disk` limit."""
    total = 0
    for directory in directories:
        try:
            fd = os.open(f"/proc/{inside}/root{directory}", os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
        try:
            if os.fstat(fd).st_dev == _device(directory):
                continue
            usage = os.fstatvfs(fd)
        except OSError:
            continue
        finally:
            os.close(fd)
        if usage.f_blocks != -(-size_bytes // usage.f_frsize):
            continue  # not the sandbox's scratch (a tmpfs's size is rounded up to whole pages)
        total += (usage.f_blocks - usage.f_bfree) * usage.f_frsize
    return total


def _device(path: str) -> int | None:
    try:
        return os.stat(path).st_dev
    except OSError:
        return None


# -- one attempt, one command ------------------------------------------------------------------

_numbers = itertools.count(1)


class Bounds:
    """One attempt's limits; every command it runs gets them, and its disk written counts from
    its writable `trees` as the first command found them.

    `mechanisms` are tried in order; `rlimit` holds where none of them does."""

    def __init__(
        self,
        limits: Limits,
        trees: Sequence[Path] = (),
        *,
        mechanisms: Sequence[Mechanism] = PREFERENCE,
    ) -> None:
        self.limits = limits
        self.trees = tuple(trees)
        self.mechanisms = tuple(mechanisms)
        self._baseline: int | None = None

    async def command(self, *, tmpfs: Sequence[str] = ()) -> CommandBounds:
        """The bounds of one command about to start; `tmpfs` are the sandbox's private scratch
        directories, each sized to the disk bound (`sized_tmpfs`), whose contents count as
        written (none without the sandbox)."""
        if self._baseline is None:
            self._baseline = await asyncio.to_thread(tree_bytes, self.trees)
        group = await asyncio.to_thread(self._group)
        return CommandBounds(self, group, self._baseline, tuple(tmpfs))

    def written(self, baseline: int) -> int:
        return max(0, tree_bytes(self.trees) - baseline)

    def _group(self) -> Group | None:
        """A group by the first of `mechanisms` that makes one here; None: rlimits alone."""
        host = this_host()
        name = f"{GROUP_PREFIX}{os.getpid()}-{next(_numbers)}"
        for mechanism in self.mechanisms:
            if mechanism == "rlimit":
                return None
            try:
                if mechanism == "cgroup2" and host.v2 is not None:
                    return make_v2_group(host.v2, name, self.limits)
                if mechanism == "cgroup1" and host.v1 is not None:
                    return make_v1_group(host.v1[0], host.v1[1], name, self.limits)
            except OSError as error:
                _note_once(mechanism, f"cannot make a group: {error.strerror or error}")
                continue
            _note_once(mechanism, host.why_not.get(mechanism, "not available"))
        return None


@functools.cache
def _note_once(mechanism: str, why: str) -> None:
    log.info("lab_limits_mechanism_skipped", mechanism=mechanism, why=why)


class CommandBounds:
    """One command's share of its attempt's bounds: the group it joins before it runs, the
    limits it gets, and the watch that says which limit it reached."""

    def __init__(
        self, bounds: Bounds, group: Group | None, baseline: int, tmpfs: tuple[str, ...]
    ) -> None:
        self.limits = bounds.limits
        self.group = group
        self.mechanism: Mechanism = group.mechanism if group is not None else "rlimit"
        self.reached: Limit | None = None
        self._bounds = bounds
        self._baseline = baseline
        self._tmpfs = tmpfs
        self._rlimits = [(r, capped(v, resource.getrlimit(r)[1])) for r, v in self._wanted()]
        self._procs: list[int] = []

    def _wanted(self) -> list[tuple[int, int]]:
        limits = self.limits
        wanted = [
            (resource.RLIMIT_NOFILE, limits.open_files),
            (resource.RLIMIT_FSIZE, limits.disk_bytes),
            (resource.RLIMIT_CORE, 0),
        ]
        if self.group is None:
            wanted.append((resource.RLIMIT_DATA, limits.memory_bytes))
        return wanted

    def open(self) -> None:
        """Open the groups' `cgroup.procs` for `enter` (in this process: the child only writes)."""
        if self.group is not None:
            flags = os.O_WRONLY | os.O_CLOEXEC
            self._procs = [os.open(path, flags) for path in self.group.procs_files()]

    def enter(self) -> None:
        """In the child, between fork and exec: join the groups, take the rlimits."""
        me = str(os.getpid()).encode()
        for fd in self._procs:
            os.write(fd, me)
        for which, value in self._rlimits:
            resource.setrlimit(which, (value, value))

    def opened(self) -> None:
        """The child has started (or failed to): the parent's copies of the files are closed."""
        for fd in self._procs:
            os.close(fd)
        self._procs = []

    def members(self) -> set[int]:
        return self.group.members() if self.group is not None else set()

    async def watch(self, root: int, clock: Clock) -> Limit:
        """The first limit the command rooted at `root` reaches (the call runs until then)."""
        next_disk = clock.monotonic()
        while True:
            disk = clock.monotonic() >= next_disk
            began = clock.monotonic()
            limit = await asyncio.to_thread(self._look, root, disk=disk)
            if disk:
                spent = clock.monotonic() - began
                next_disk = clock.monotonic() + max(DISK_WATCH_S, DISK_WATCH_SHARE * spent)
            if limit is not None:
                self.reached = limit
                return limit
            await clock.sleep(WATCH_S)

    async def settle(self, root: int) -> Limit | None:
        """After the command and its sweep: the limit it reached, if the watch had not seen it
        (an OOM kill or SIGXFSZ that ended it between two looks, a limit its leftovers reached)."""
        if self.reached is None:
            self.reached = await asyncio.to_thread(self._look, root, disk=True)
        return self.reached

    def _look(self, root: int, *, disk: bool) -> Limit | None:
        if self.group is not None:
            reached = self.group.reached()
            if reached is not None:
                return reached
        else:
            tree = descendants(root, at_most=self.limits.pids)
            if len(tree) >= self.limits.pids:
                return "pids"
            if _resident(tree) >= self.limits.memory_bytes:
                return "memory"
        if disk and self._written(root) >= self.limits.disk_bytes:
            return "disk"
        return None

    def _written(self, root: int) -> int:
        written = self._bounds.written(self._baseline)
        if self._tmpfs:
            inside = next(iter(descendants(root, at_most=1)), None)
            if inside is not None and _mount_namespace(inside) != _mount_namespace(os.getpid()):
                written += tmpfs_bytes(inside, self._tmpfs, self.limits.disk_bytes)
        return written

    async def close(self, clock: Clock) -> None:
        """Remove the groups once their last members are gone (a kill takes a moment)."""
        if self.group is None:
            return
        deadline = clock.monotonic() + REMOVE_S
        while not await asyncio.to_thread(self.group.remove):
            if clock.monotonic() >= deadline:
                log.warning("lab_limits_group_left", group=str(self.group.dirs[0]))
                return
            await clock.sleep(WATCH_S / 4)


def _resident(pids: Iterable[int]) -> int:
    """The processes' resident memory, each shared page counted once in all (their PSS: a forked
    child's pages shared with its parent are not counted twice)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(ValueError):
            total += proportional_kib(_read(Path(f"/proc/{pid}/smaps_rollup"))) * 1024
    return total


def _mount_namespace(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/mnt").st_ino
    except OSError:
        return None
