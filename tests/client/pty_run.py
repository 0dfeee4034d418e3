"""Running `forge attach` the way a person does: inside a real PTY (ptyprocess)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence

import ptyprocess

FORGE = [sys.executable, "-m", "forge.cli"]


class PtyRun:
    """A process on a PTY; `expect` reads until a byte string shows up (in a thread)."""

    def __init__(self, argv: Sequence[str], *, cols: int = 100, rows: int = 30) -> None:
        self.process = ptyprocess.PtyProcess.spawn(
            list(argv), env=dict(os.environ), dimensions=(rows, cols)
        )
        self.output = b""

    async def expect(self, wanted: bytes, *, since: int = 0, within: float = 60.0) -> bytes:
        """All output up to now, once `wanted` is in it past offset `since`; AssertionError on
        EOF or time out."""
        try:
            async with asyncio.timeout(within):
                while wanted not in self.output[since:]:
                    chunk = await asyncio.to_thread(self._read)
                    if not chunk:
                        raise AssertionError(f"EOF before {wanted!r}; got {self.output!r}")
                    self.output += chunk
        except TimeoutError:
            raise AssertionError(f"no {wanted!r} within {within} s; got {self.output!r}") from None
        return self.output

    async def finish(self, *, within: float = 60.0) -> int:
        """Read to EOF and return the exit status."""
        async with asyncio.timeout(within):
            while chunk := await asyncio.to_thread(self._read):
                self.output += chunk
            await asyncio.to_thread(self.process.wait)
        status = self.process.exitstatus
        assert isinstance(status, int), self.process.signalstatus
        return status

    def write(self, data: bytes) -> None:
        self.process.write(data)

    def _read(self) -> bytes:
        try:
            data: bytes = self.process.read(65536)
        except EOFError:
            return b""
        return data

    def __enter__(self) -> PtyRun:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process.isalive():
            self.process.terminate(force=True)
