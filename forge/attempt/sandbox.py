"""The recipe's sandbox: bubblewrap showing an allow-list of the machine, and nothing else.

A sandboxed command sees, read-only, the operating system (`SYSTEM`: `/usr`, `/bin`, `/sbin`,
`/lib*`, `/etc`), the Formula atom's `mounts`, and the trees of the step it runs: the recipe its
workspace and home (writable) and its task file; a verifying step its own view and a fresh home
(writable), the attempt source's git folder and its acceptance script (read-only). Nothing else of
the host exists inside: no `/home`, `/root`, `/srv`, `/mnt`, `/opt` unless mounted, no other
clone, no earlier `--out`. `/tmp`, `/var/tmp`, `/dev/shm` and `/run` are empty and private. It
runs in its own user, PID, IPC and UTS namespaces with every capability dropped, and in its own
network namespace: loopback only, and with the Formula's atom's `network: true` one port on it
that forge opens from outside, served by the attempt's egress proxy (`forge.attempt.egress`).

A protected path (`--out`, `--source`, the cohort's folder, forge's own directories) that lies
inside an allowed folder is still absent: that folder's other entries are mounted one by one,
never something over the protected path, so not even the mount table names it; bubblewrap reads
its arguments from a file descriptor, so its command line does not name them either.

Not `--die-with-parent`: when the command exits, what it left running stays in the namespace
until forge's sweep kills it by its marker variable and counts it, exactly as without the sandbox
(with it, the kernel would race the sweep and the count would depend on timing). The sandbox's
own init process is killed by that sweep too, but never counted.

Where bubblewrap cannot run (not installed, no user namespaces), `probe` says why and the attempt
runs with the layout seal alone (its directories outside `--out`, nothing naming it).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from forge.attempt.limits import sized_tmpfs

PROGRAM_ENV = "FORGE_LAB_BWRAP"
"""Which bubblewrap to run (default `bwrap` on PATH); one that cannot run turns the sandbox off."""
NAME = "bubblewrap"
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""The operating system a standard toolchain needs, shown read-only where it exists (a merged
`/usr`'s `/bin -> usr/bin` as the same link)."""
PRIVATE_TMP = ("/tmp", "/var/tmp", "/dev/shm", "/run")
"""Shared scratch and runtime directories: empty and private inside the sandbox (`/run` holds
other programs' sockets, which a network namespace does not cut off)."""
_VIRTUAL = ("/proc", "/dev")
PROBE_TIMEOUT_S = 30.0

Scan = Callable[[str], "list[Entry] | None"]
"""A directory's entries, or None when it cannot be listed (it is then hidden whole)."""


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str
    """`dir`, `file`, `link` or `other` (sockets, pipes, devices: never mounted)."""
    target: str = ""
    """A link's target text."""
    resolved: str = ""
    """A link's resolved path."""


def namespace_flags() -> list[str]:
    """Every namespace of its own, the network's too (its one way out is the egress port)."""
    return [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--unshare-net",
    ]


@dataclass(frozen=True)
class Probe:
    """Whether bubblewrap runs here: its path, or the reason it does not."""

    program: str | None
    reason: str | None

    @property
    def available(self) -> bool:
        return self.program is not None


_probes: dict[str, Probe] = {}


def probe(env: Mapping[str, str]) -> Probe:
    """Run bubblewrap once with the attempt's namespaces; cached per program for the process."""
    wanted = env.get(PROGRAM_ENV, "bwrap")
    if wanted in _probes:
        return _probes[wanted]
    program = shutil.which(wanted, path=env.get("PATH", os.defpath))
    if program is None:
        result = Probe(
            None,
            f"{wanted} not found (install bubblewrap: apt-get install bubblewrap)"
            if wanted == "bwrap"
            else f"{PROGRAM_ENV}={wanted} is not an executable",
        )
    else:
        result = _try(program)
    _probes[wanted] = result
    return result


def _try(program: str) -> Probe:
    argv = [
        program,
        *namespace_flags(),
        "--ro-bind",
        "/",
        "/",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--",
        "true",
    ]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return Probe(None, f"{program} cannot run: {error}")
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[0]
        return Probe(None, f"{program} cannot create the sandbox: {first}")
    return Probe(program, None)


def scan_directory(path: str) -> list[Entry] | None:
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return None
    entries = []
    for name in names:
        child = os.path.join(path, name)
        try:
            mode = os.lstat(child).st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode):
            try:
                target = os.readlink(child)
            except OSError:
                continue
            entries.append(Entry(name, "link", target, os.path.realpath(child)))
        elif stat.S_ISDIR(mode):
            entries.append(Entry(name, "dir"))
        elif stat.S_ISREG(mode):
            entries.append(Entry(name, "file"))
        else:
            entries.append(Entry(name, "other"))
    return entries


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def filesystem_args(
    hidden: Iterable[str],
    *,
    shown: Iterable[str] = (),
    scratch: Iterable[str] = (),
    tmpfs_bytes: int | None = None,
    scan: Scan = scan_directory,
) -> list[str]:
    """bwrap mount arguments: `SYSTEM` and `shown` read-only without `hidden`, scratch private.

    A folder holding no hidden path is bound whole; one that does is recreated and its other
    entries are bound one by one (links recreated, unless they lead into a hidden path), so the
    hidden path is simply absent. A top-level link of `SYSTEM` (`/bin -> usr/bin`) is recreated.
    `scratch` (where the attempts' private directories live) is left out of a shown folder that
    holds it, but a mount may sit inside it (a virtualenv under `/tmp`). With `tmpfs_bytes`, each
    private scratch folder holds at most that much (the attempt's disk bound).
    """
    hide = {p for p in hidden if p != "/"}
    carved = sorted(set(scratch))
    system_excluded = sorted(hide | set(carved) | set(PRIVATE_TMP) | set(_VIRTUAL))
    args: list[str] = []

    def expose(path: str, excluded: Sequence[str], bind: str) -> None:
        if any(_inside(path, h) for h in excluded):
            return
        if not any(_inside(h, path) for h in [*excluded, *carved]):
            args.extend([bind, path, path])
            return
        entries = scan(path)
        if entries is None:
            return
        args.extend(["--dir", path])
        for entry in entries:
            child = os.path.join(path, entry.name)
            if entry.kind == "dir":
                expose(child, excluded, bind)
            elif entry.kind == "file" and not any(_inside(child, h) for h in [*excluded, *carved]):
                args.extend(["--ro-bind", child, child])
            elif entry.kind == "link" and not any(_inside(entry.resolved, h) for h in hide):
                args.extend(["--symlink", entry.target, child])

    for root in SYSTEM:
        if os.path.islink(root):
            args.extend(["--symlink", os.readlink(root), root])
        elif os.path.isdir(root):
            expose(root, system_excluded, "--ro-bind")
    args += ["--proc", "/proc", "--dev", "/dev"]
    for folder in PRIVATE_TMP:
        args += sized_tmpfs(folder, tmpfs_bytes) if tmpfs_bytes else ["--tmpfs", folder]
    # After the private scratch folders: a mount may live in one (a virtualenv under /tmp).
    for path in shown:
        expose(path, sorted(hide), "--ro-bind-try")  # a missing mount is simply not there
    return args


@dataclass(frozen=True)
class Trees:
    """The folders one step may touch, beside the system and the mounts."""

    writable: tuple[str, ...] = ()
    """Mounted read-write when they exist (a step's trees and home, test-hook binds)."""
    readonly: tuple[str, ...] = ()
    """Mounted read-only when they exist (a task file's folder, an acceptance script's)."""


@dataclass(frozen=True)
class Sandbox:
    """How one step of an attempt runs: bubblewrap with the system, the mounts and its trees."""

    program: str
    system: tuple[str, ...]
    """`filesystem_args` of the attempt: the allow-list without the protected paths, computed
    once per attempt (an allowed folder holding a protected path is listed once)."""
    trees: Trees = Trees()
    launcher: tuple[str, ...] = ()
    """What runs bubblewrap: the egress port's launcher when the atom has the network (the
    port is its steps' only way out), else nothing."""

    @classmethod
    def for_attempt(
        cls,
        program: str,
        *,
        hidden: Iterable[str],
        mounts: Iterable[str],
        scratch: Iterable[str] = (),
        tmpfs_bytes: int | None = None,
        launcher: Sequence[str] = (),
    ) -> Sandbox:
        layout = filesystem_args(
            hidden,
            shown=realpaths(mounts),
            scratch=realpaths(scratch),
            tmpfs_bytes=tmpfs_bytes,
        )
        return cls(program, tuple(layout), launcher=tuple(launcher))

    def with_trees(self, trees: Trees) -> Sandbox:
        """The same system for a step that sees `trees`."""
        return replace(self, trees=trees)

    def args_bytes(self, argv: Sequence[str], cwd: Path) -> bytes:
        """Every bubblewrap option, NUL-separated, for `--args FD`."""
        options = [*namespace_flags(), *self.system]
        for path in self.trees.readonly:
            options += ["--ro-bind-try", path, path]
        for path in self.trees.writable:
            options += ["--bind-try", path, path]
        options += ["--chdir", str(cwd)]
        return b"".join(o.encode("utf-8", "surrogateescape") + b"\0" for o in options)

    def argv(self, argv: Sequence[str], fd: int) -> list[str]:
        return [*self.launcher, self.program, "--args", str(fd), "--", *argv]


def args_fd(data: bytes) -> int:
    """A memory file holding `data`, positioned at its start, for bubblewrap's `--args`."""
    fd = os.memfd_create("forge-sandbox-args", 0)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def realpaths(paths: Iterable[str | None]) -> tuple[str, ...]:
    """Absolute, symlink-free spellings (what the mount table holds), without duplicates."""
    return tuple(sorted({os.path.realpath(os.path.expanduser(p)) for p in paths if p}))
