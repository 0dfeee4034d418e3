"""File descriptors a worker lends its supervisor, over a unix socket pair made at each spawn.

ZeroMQ carries bytes, not descriptors. A kind that declares `lends` gets a `SOCK_SEQPACKET`
pair: the worker inherits one end (`pass_fds`, its number in the environment) and sends each
descriptor it lends as one message with `SCM_RIGHTS`; the supervisor's end is read without
waiting, because a worker lends before it says hello, so what it lent is there by the time
its first answer is. The pair lives as long as the generation: closing the supervisor's end
releases anything lent and never borrowed (the kernel closes descriptors still in flight).

The terminal host lends its PTY master, so a keystroke is written by the supervisor itself
and skips a ZeroMQ hop and the host's loop (docs/architecture/terminal.md, "Keystrokes").
"""

from __future__ import annotations

import os
import socket

LEND_MESSAGE = b"fd"
"""Each lend's one byte-string body; only its descriptor matters."""


def lending_pair() -> tuple[socket.socket, socket.socket]:
    """(the supervisor's end, non-blocking; the worker's end, to be inherited)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setblocking(False)
    theirs.set_inheritable(True)
    return ours, theirs


def lend(channel: socket.socket, fd: int) -> None:
    """The worker's side: hand a duplicate of `fd` over (the worker keeps its own)."""
    socket.send_fds(channel, [LEND_MESSAGE], [fd])


def borrow(channel: socket.socket) -> int | None:
    """The supervisor's side: the next descriptor lent (the caller owns it), else None."""
    try:
        _, fds, _, _ = socket.recv_fds(channel, len(LEND_MESSAGE), 1)
    except OSError:  # nothing lent (EAGAIN), or the pair is gone
        return None
    if not fds:
        return None
    os.set_inheritable(fds[0], False)  # recv_fds drops its flags (MSG_CMSG_CLOEXEC) on 3.11
    return fds[0]
