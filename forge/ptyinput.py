"""A terminal's keystrokes written to its PTY master: in order, never blocking the writer's loop.

The master is non-blocking (the flag is the open file's, so the terminal host's copy and a
borrowed one share it). What the line discipline cannot take now (a paste into a shell that
is not reading) waits here and is written as the PTY drains, up to `PENDING_LIMIT`; past
that, input is refused, so a client cannot grow the writer's memory through a shell that
never reads. A PTY whose shell is gone (EIO) takes nothing more.

The supervisor writes a terminal's keystrokes through one of these on the master its host
lent it (`forge.ipc.lending`): a keystroke skips a ZeroMQ hop and the host's loop.
"""

from __future__ import annotations

import asyncio
import os

PENDING_LIMIT = 1024 * 1024
"""Bytes of keystrokes that may wait for a PTY that is not reading."""


class PtyInput:
    """Writes to one PTY master `fd`, which it owns and closes."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.fd = fd
        self._loop = loop or asyncio.get_running_loop()
        self._pending = bytearray()
        self._gone = False
        self.closed = False
        os.set_blocking(fd, False)

    @property
    def pending(self) -> int:
        """Bytes waiting for the PTY to take them."""
        return len(self._pending)

    def write(self, data: bytes) -> bool:
        """Keystrokes for the shell, after everything written before them: taken whole, or
        refused whole (False: closed, the shell gone, or more than `PENDING_LIMIT` would wait)."""
        if self.closed or self._gone or len(self._pending) + len(data) > PENDING_LIMIT:
            return False
        if self._pending:
            self._pending += data
            return True
        written = self._write(data)
        if written < len(data):
            self._pending += data[written:]
            self._loop.add_writer(self.fd, self._write_pending)
        return not self._gone

    def _write(self, data: bytes | bytearray) -> int:
        try:
            return os.write(self.fd, data)
        except BlockingIOError:
            return 0
        except OSError:  # EIO: the shell and its side of the PTY are gone
            self._gone = True
            return len(data)

    def _write_pending(self) -> None:
        del self._pending[: self._write(self._pending)]
        if not self._pending:
            self._loop.remove_writer(self.fd)

    def close(self) -> None:
        """Stop writing and close the descriptor; what still waits is dropped."""
        if self.closed:
            return
        self.closed = True
        if self._pending:
            self._loop.remove_writer(self.fd)
            self._pending.clear()
        os.close(self.fd)
