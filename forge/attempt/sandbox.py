"""The recipe's sandbox: bubblewrap with the system read-only and the answer out of reach.

A sandboxed command sees the machine's files read-only, except what could hold the answer or
point at it: `--out`, `--source` and its local origins, the cohort's folder, the caller's home
and forge's own directories are not mounted at all, `/tmp` is private, and only the attempt's
trees (throwaway source, workspace, verification views) and home are writable; its task file
and acceptance script are read-only, and forge's own files beside them are not mounted. It runs in
its own user, PID, IPC and UTS namespaces with every capability dropped, and in its own network
namespace (loopback only) unless the Formula's atom asks for `network: true`.

Not `--die-with-parent`: when the command exits, what it left running stays in the namespace
until forge's sweep kills it by its marker variable and counts it, exactly as without the sandbox
(with it, the kernel would race the sweep and the count would depend on timing). The sandbox's
own init process is killed by that sweep too, but never counted.

A hidden path is left out by mounting its ancestors' other entries one by one, never by mounting
something over it, so not even the mount table names it; bubblewrap reads its arguments from a
file descriptor, so its command line does not name them either.

Where bubblewrap cannot run (not installed, no user namespaces), `probe` says why and the attempt
runs with the layout seal alone (its directories outside `--out`, nothing naming it).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PROGRAM_ENV = "FORGE_LAB_BWRAP"
"""Which bubblewrap to run (default `bwrap` on PATH); one that cannot run turns the sandbox off."""
NAME = "bubblewrap"
PRIVATE_TMP = ("/tmp", "/var/tmp", "/dev/shm", "/run")
"""Shared scratch and runtime directories: empty and private inside the sandbox (`/run` holds
other programs' sockets, which a network namespace does not cut off)."""
RESOLVER_DIRS = ("/run/systemd/resolve",)
"""Where `/etc/resolv.conf` may point; mounted back when the atom asks for the network."""
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


def namespace_flags(*, network: bool) -> list[str]:
    flags = [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    if not network:
        flags.append("--unshare-net")
    return flags


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
        *namespace_flags(network=False),
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
    hidden: Iterable[str], *, network: bool, scan: Scan = scan_directory
) -> list[str]:
    """bwrap mount arguments: the system read-only without `hidden`, scratch dirs private.

    A directory holding no hidden path is bound whole; one that does is recreated and its other
    entries are bound one by one (links recreated, unless they lead into a hidden path), so the
    hidden path is simply absent. `/` itself is never hidden.
    """
    hide = {p for p in hidden if p != "/"}
    excluded = sorted(hide | set(PRIVATE_TMP) | set(_VIRTUAL))
    args: list[str] = []

    def expose(path: str) -> None:
        if any(_inside(path, h) for h in excluded):
            return
        if not any(_inside(h, path) for h in excluded):
            args.extend(["--ro-bind", path, path])
            return
        entries = scan(path)
        if entries is None:
            return
        if path != "/":
            args.extend(["--dir", path])
        for entry in entries:
            child = os.path.join(path, entry.name)
            if entry.kind == "dir":
                expose(child)
            elif entry.kind == "file" and not any(_inside(child, h) for h in excluded):
                args.extend(["--ro-bind", child, child])
            elif entry.kind == "link" and not any(_inside(entry.resolved, h) for h in hide):
                args.extend(["--symlink", entry.target, child])

    expose("/")
    args += ["--proc", "/proc", "--dev", "/dev"]
    for scratch in PRIVATE_TMP:
        args += ["--tmpfs", scratch]
    if network:
        for folder in RESOLVER_DIRS:
            args += ["--ro-bind-try", folder, folder]
    return args


@dataclass
class Sandbox:
    """How one attempt's recipe and checks run: bubblewrap with this layout."""

    program: str
    hidden: tuple[str, ...]
    writable: tuple[str, ...]
    """The attempt's trees and home, and any test-hook binds (mounted when they exist)."""
    network: bool
    readonly: tuple[str, ...] = ()
    """The attempt's task file and acceptance folders, and the Formula's `mounts` (hidden folders
    it asked to see), read-only, when they exist."""
    _layout: list[str] | None = field(default=None, repr=False)

    def layout(self) -> list[str]:
        """Computed once per attempt: the hidden paths' ancestors are listed once."""
        if self._layout is None:
            layout = filesystem_args(self.hidden, network=self.network)
            for path in self.readonly:
                layout += ["--ro-bind-try", path, path]
            for path in self.writable:
                layout += ["--bind-try", path, path]
            self._layout = layout
        return self._layout

    def args_bytes(self, argv: Sequence[str], cwd: Path) -> bytes:
        """Every bubblewrap option, NUL-separated, for `--args FD`."""
        options = [*namespace_flags(network=self.network), *self.layout(), "--chdir", str(cwd)]
        return b"".join(o.encode("utf-8", "surrogateescape") + b"\0" for o in options)

    def argv(self, argv: Sequence[str], fd: int) -> list[str]:
        return [self.program, "--args", str(fd), "--", *argv]


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
