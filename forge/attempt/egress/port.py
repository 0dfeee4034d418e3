"""Run bubblewrap with the proxy's port already listening inside its network namespace.

`python -I -S .../forge/attempt/egress/port.py CONTROL PORT BWRAP [BWRAP'S ARGUMENTS...]`

This process forks, and becomes bubblewrap by exec (its pid, its parent-death signal, its exit
status: to whoever started it, nothing changed but the start). The forked child waits for
bubblewrap's `--info-fd` (the sandbox's pid, once its namespaces exist), enters the sandbox's
user and network namespaces (it owns the user namespace, so it may), opens a TCP socket
listening on 127.0.0.1:PORT there (IP_FREEBIND: the sandbox may not have brought its loopback up
yet), and sends it with a pidfd of bubblewrap to the proxy's abstract unix socket CONTROL; then
it exits, which closes the `--block-fd` pipe bubblewrap waits on before it runs the command.
So the port listens before the command's first instruction, the proxy serves it until that
bubblewrap exits, and nothing of forge's runs in the sandbox (nothing the command could kill,
replace or count among its processes). If a step fails, the child kills the sandbox before
its command starts and says why on stderr; bubblewrap then exits 137.

Only the standard library and run by path without `site`, so a start costs a bare interpreter's
(it runs once per sandboxed command).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
from collections.abc import Sequence

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
"""From <sched.h>."""
IP_FREEBIND = 15
"""From <linux/in.h> (`socket.IP_FREEBIND` only from Python 3.12)."""
BACKLOG = 128
IGNORED_BY_PYTHON = (signal.SIGPIPE, signal.SIGXFSZ)
"""What the interpreter ignores at start, restored as `subprocess` restores it for a child (a
command that writes to a closed pipe, or past its file-size limit, dies of it)."""


def main(argv: Sequence[str]) -> int:
    if len(argv) < 3 or not argv[1].isdigit():
        sys.stderr.write("usage: port.py CONTROL PORT BWRAP [ARG...]\n")
        return 2
    control, port, program, rest = argv[0], int(argv[1]), argv[2], argv[3:]
    info_r, info_w = os.pipe()
    block_r, block_w = os.pipe()
    bwrap = os.getpid()
    if os.fork() == 0:
        os.close(info_w)
        os.close(block_r)
        code = 1
        try:
            code = attach(control, port, bwrap, info_r)
        finally:
            os._exit(code)  # closes block_w: bubblewrap goes on
    os.close(info_r)
    os.close(block_w)
    os.set_inheritable(info_w, True)
    os.set_inheritable(block_r, True)
    options = ["--info-fd", str(info_w), "--block-fd", str(block_r)]
    for ignored in IGNORED_BY_PYTHON:  # ignored survives exec: the command would inherit it
        signal.signal(ignored, signal.SIG_DFL)
    try:
        os.execvp(program, [program, *options, *rest])
    except OSError as error:
        sys.stderr.write(f"forge egress: cannot run {program}: {error}\n")
    return 127


def attach(control: str, port: int, bwrap: int, info: int) -> int:
    """Open the port in the sandbox of `bwrap` (this process's parent) and hand it over."""
    data = b""
    while chunk := os.read(info, 4096):
        data += chunk
    if not data:
        return 0  # bubblewrap failed before its sandbox existed, and says why itself
    sandbox = child_pid(data)
    if sandbox is None:
        sys.stderr.write(f"forge egress: bubblewrap's --info-fd said {data!r}, no child-pid\n")
        os.kill(bwrap, signal.SIGKILL)
        return 1
    try:
        if os.getppid() != bwrap:
            raise OSError("bubblewrap exited before its sandbox started")
        watch = os.pidfd_open(bwrap)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as link:
            link.connect(b"\0" + control.encode())
            _enter(sandbox, "user", CLONE_NEWUSER)
            _enter(sandbox, "net", CLONE_NEWNET)
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
                listener.setsockopt(socket.SOL_IP, IP_FREEBIND, 1)
                listener.bind(("127.0.0.1", port))
                listener.listen(BACKLOG)
                socket.send_fds(link, [f"{bwrap}\n".encode()], [listener.fileno(), watch])
    except OSError as error:
        sys.stderr.write(
            f"forge egress: the sandbox's proxy port {port} did not open ({error}); "
            "its command does not run\n"
        )
        os.kill(sandbox, signal.SIGKILL)
        return 1
    return 0


def child_pid(info: bytes) -> int | None:
    """The sandbox's pid in bubblewrap's `--info-fd` JSON (`"child-pid": 1234,`), read without
    the json module: importing it costs more than the rest of this launcher's start."""
    _, key, rest = info.partition(b'"child-pid":')
    words = rest.split(maxsplit=1)
    number = words[0].rstrip(b",}") if key and words else b""
    return int(number) if number.isdigit() else None


def _enter(pid: int, kind: str, flag: int) -> None:
    fd = os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC)
    try:
        if ctypes.CDLL(None, use_errno=True).setns(fd, flag) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns({kind}): {os.strerror(errno)}")
    finally:
        os.close(fd)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
