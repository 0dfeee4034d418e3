"""`forge attach ORG/PROJECT/LABEL`: this terminal, raw, on a seat's terminal, in control.

The local tty is put in raw mode (restored on every way out: detach, shell exit, a lost
terminal, a signal, an error), the seat's terminal is viewed (`terminal_view`, opening it on
first use), control is taken and the local size sent (again on every SIGWINCH). The view's
`screen` is drawn, then every kind-4 chunk above its `seq`; keyboard bytes go out as kind 5
through the detach machine (`Ctrl-\\` then `d`). The seat's session subject tells when the shell
exits (`terminal_changed` with `alive: false`) or the terminal goes (`null`). `Ctrl-\\` then `c`
takes control back from a viewer that took it, ahead of the keys typed with it. A lost link is
redialled by `ClientSession`, which re-attaches and repaints. On SIGCONT (back from a stop) the
tty is made raw again and the link probed at once. What to draw and when to stop is decided by
the pure `AttachView`; this module is the I/O around it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import ssl
import termios
import tty
from collections.abc import Awaitable, Iterator

from forge.client.attach_view import REFUSED, AttachView, Ending
from forge.client.detach import DetachKeys
from forge.client.errors import ConnectionLost, ServerRefused
from forge.client.frames import Error
from forge.client.session import ClientSession, Reconnected, SessionEvent
from forge.errors import UserError
from forge.logs import get_logger
from forge.wire.seats import Seat, session

log = get_logger(__name__)

COLS = (2, 500)
ROWS = (1, 300)
"""O-TM4's bounds; a local window outside them is clamped rather than refused."""


def parse_seat(text: str) -> Seat:
    parts = text.split("/")
    if len(parts) != 3 or not all(parts):
        raise UserError(f"a seat is ORG/PROJECT/LABEL, got {text!r}")
    return Seat(*parts)


def terminal_size(fd: int) -> tuple[int, int]:
    """(cols, rows) of the local terminal, clamped to what the server takes."""
    size = os.get_terminal_size(fd)
    return (
        min(max(size.columns, COLS[0]), COLS[1]),
        min(max(size.lines, ROWS[0]), ROWS[1]),
    )


@contextlib.contextmanager
def raw_mode(fd: int) -> Iterator[None]:
    """The tty in raw mode for the block; its exact previous settings afterwards."""
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class Attachment:
    """One `forge attach` run over an open session; `run` returns how it ended."""

    def __init__(self, client: ClientSession, seat: Seat, *, tty_fd: int, out_fd: int) -> None:
        self.client = client
        self.seat = seat
        self.tty_fd = tty_fd
        self.out_fd = out_fd
        self.view = AttachView(seat)
        self._keys = DetachKeys()
        self._typed: asyncio.Queue[bytes | None] = asyncio.Queue()
        """Keyboard bytes in order; None is the take-control key, sent in its place among them."""
        self._ended: asyncio.Future[Ending] = asyncio.get_running_loop().create_future()
        self._background: set[asyncio.Task[None]] = set()

    async def run(self) -> Ending:
        loop = asyncio.get_running_loop()
        hold = await self.client.view_terminal(self.seat)
        await self.client.take_control()
        await self.client.resize(*terminal_size(self.tty_fd))
        await self.client.show(self.seat)
        loop.add_reader(self.tty_fd, self._on_keyboard)
        signals = {
            signal.SIGWINCH: self._on_winch,
            signal.SIGCONT: self._on_cont,
            signal.SIGTERM: lambda: self._end(Ending("terminated (SIGTERM)", 128 + 15)),
            signal.SIGHUP: lambda: self._end(Ending("the terminal hung up", 128 + 1)),
        }
        for signum, handler in signals.items():
            loop.add_signal_handler(signum, handler)
        tasks = [
            asyncio.create_task(self._pump(), name="attach-pump"),
            asyncio.create_task(self._send_keys(), name="attach-keys"),
            asyncio.create_task(self._watch_seat(), name="attach-seat"),
        ]
        for task in tasks:
            task.add_done_callback(self._on_task_done)
        log.info("client_attached", seat=str(self.seat), terminal=hold.id)
        try:
            return await self._ended
        finally:
            loop.remove_reader(self.tty_fd)
            for signum in signals:
                loop.remove_signal_handler(signum)
            for task in (*tasks, *self._background):
                task.cancel()
            await asyncio.gather(*tasks, *self._background, return_exceptions=True)

    def _on_task_done(self, task: asyncio.Task[None]) -> None:
        """A task that fails ends the run (with the tty restored), never leaves it hanging."""
        if task.cancelled() or task.exception() is None:
            return
        error = task.exception()
        log.error("client_attach_failed", task=task.get_name(), error=repr(error))
        if isinstance(error, OSError):
            self._end(Ending(f"the terminal failed ({error.strerror or error})", REFUSED))
        else:
            self._end(Ending(f"attach stopped: {error!r}", REFUSED))

    # Inputs.

    def _on_keyboard(self) -> None:
        try:
            data = os.read(self.tty_fd, 65536)
        except OSError as error:
            self._end(Ending(f"the terminal cannot be read ({error.strerror})"))
            return
        if not data:
            self._end(Ending("the terminal closed its input"))
            return
        keys = self._keys.feed(data)
        if keys.take:
            self._typed.put_nowait(None)
        if keys.forward:
            self._typed.put_nowait(keys.forward)
        if keys.detach:
            self._end(Ending(f"detached from {self.seat}"))

    def _on_winch(self) -> None:
        self._spawn(self.client.resize(*terminal_size(self.tty_fd)))

    def _on_cont(self) -> None:
        tty.setraw(self.tty_fd)
        with contextlib.suppress(ConnectionLost):
            self._spawn(self.client.connection.probe_now())

    def _spawn(self, work: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(_quietly(work))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _send_keys(self) -> None:
        while True:
            data = await self._typed.get()
            try:
                if data is None:
                    await self.client.take_control()
                else:
                    await self.client.type(data)
            except ConnectionLost:
                log.info("client_keys_dropped", bytes=len(data or b""), why="the link is down")

    async def _watch_seat(self) -> None:
        """Subscribe the seat's session, whose `terminal` row says when the shell is gone."""
        try:
            data = await self.client.subscribe(session(self.seat))
        except ConnectionLost:
            return
        hold = self.client.terminal
        if hold is not None:
            reaction = self.view.summary(data.get("terminal"), hold)
            if reaction.ending is not None:
                self._end(reaction.ending)

    # Output and the seat's news.

    async def _pump(self) -> None:
        while True:
            try:
                event = await self.client.next_event()
            except ServerRefused as refused:
                self._end(Ending(f"the terminal is gone: {refused.why}", REFUSED))
                return
            self._handle(event)

    def _handle(self, event: SessionEvent) -> None:
        if isinstance(event, Error):
            log.info("client_server_error", what=event.what, why=event.why)
        elif isinstance(event, Reconnected):
            log.info("client_reattached", seat=str(self.seat))
        reaction = self.view.react(event, self.client.terminal)
        if reaction.output:
            write_all(self.out_fd, reaction.output)
        if reaction.ending is not None:
            self._end(reaction.ending)

    def _end(self, ending: Ending) -> None:
        if not self._ended.done():
            self._ended.set_result(ending)


async def _quietly(work: Awaitable[None]) -> None:
    """A fire-and-forget send: a link that is down drops it (the replay resends what matters)."""
    with contextlib.suppress(ConnectionLost, ServerRefused):
        await work


async def attach(
    url: str, seat: Seat, *, tty_fd: int, out_fd: int, tls: ssl.SSLContext | None = None
) -> Ending:
    """Attach until detached or the terminal ends; the tty is raw only inside."""
    if not os.isatty(tty_fd):
        raise UserError("forge attach needs a terminal on its standard input")
    client = ClientSession(url, tls=tls)
    await client.open()
    try:
        with raw_mode(tty_fd):
            try:
                return await Attachment(client, seat, tty_fd=tty_fd, out_fd=out_fd).run()
            except ServerRefused as refused:
                return Ending(refused.why, REFUSED)
            except ConnectionLost as lost:
                return Ending(str(lost), REFUSED)
    finally:
        await client.close()
