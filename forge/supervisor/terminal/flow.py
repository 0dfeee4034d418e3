"""How a terminal's output is paced, from the shell to each viewer: every flow decision, pure.

`TerminalService` feeds this module what happened (a chunk arrived, a viewer paused, its
backlog overflowed, a view was drawn, the controller's backlog grew) and does what it answers
(send, hold, draw a fresh view, tell the host). The host's own two decisions are in
`forge.workers.terminal.flow`. The mechanisms, from the shell outwards:

1. **Host send window** (`SEND_HIGH` 1 MiB / `SEND_LOW` 256 KiB, host side). A frame goes
   straight to ZeroMQ when nothing waits and the bulk socket has room; otherwise it queues in
   the host. Past 1 MiB queued the host stops reading the PTY (reason `ipc`) until under
   256 KiB: a stalled supervisor blocks the shell instead of growing the host.
2. **ZeroMQ high-water mark** (`forge.ipc.channel.BULK_HWM`, 128 frames of up to 64 KiB). What
   makes the bulk socket "full" in 1: the supervisor reads it as fast as it can, so this fills
   only when the supervisor's loop is itself behind.
3. **Per-viewer bound** (`WATCHER_LIMIT`, ~1 MiB, `outbound.TERMINAL_LIMIT`). Chunks are queued
   on each viewer's connection as one bytes object for all. A watcher (not the controller) past
   the bound has its waiting chunks dropped and becomes *stale*; it gets no chunks until its
   backlog has drained, then a fresh view at the current seq, then chunks after it. A stalled
   watcher costs one bounded backlog, never a view per MiB, and never slows anyone else.
4. **Controller throttle** (`FLOW_HIGH` 1 MiB / `FLOW_LOW` 256 KiB). Only the controller slows
   the shell: when its connection holds `FLOW_HIGH` unsent bytes of this terminal, the host is
   told `flow paused` (reason `controller`: the PTY is not read) until the backlog is under
   `FLOW_LOW` or control moves to someone else.
   A page that reports what it has parsed (`terminal_ack{seq}`) paces the shell by more than
   its unsent backlog: a browser reads its socket as fast as bytes come and queues them for its
   terminal emulator, and the sockets' kernel buffers hold megabytes more (measured: ~3 MiB
   unsent in the supervisor's socket and ~1.3 MiB unread in the browser's during a flood, with
   only ~200 KiB waiting in the page), so a key typed during a flood showed only behind all of
   it. While such a page controls and takes frames live, the host is told it paces (`Pace`)
   and each seq it has parsed, and reads the PTY only while at most `UNPARSED_HIGH` of what
   it sent is unparsed (`forge.workers.terminal.flow.ParseWindow`): the bound is kept where the
   bytes are made, so neither this backlog nor the sockets' buffers can hold more than it (only
   what the host's reader thread read before its loop saw the pause overshoots). A watcher's
   acks pace nothing (a slow phone never slows the typist).
5. **Controller bound** (`CONTROLLER_LIMIT`, 16 MiB). The controller is paced by 4, not dropped:
   after `FLOW_HIGH` is crossed up to ~9 MiB more can still arrive (the ZeroMQ pipe of 2 plus
   the host's queue of 1) before the PTY stops, so its bound sits well above that. It is still
   a bound: a controller that stops reading for good is dropped to a fresh view like a watcher.
6. **Mute epochs**. While no viewer takes frames live (none attached, or every one paused or
   stale) the host is told to send none (`flow muted`): the shell runs on, the host's screen
   model follows, and the supervisor and ZeroMQ carry nothing. Every way back to live goes
   through a fresh view whose request is sent after the unmute, so nothing a viewer needs is
   missed. Decisions are numbered when they are made and the host applies only a newer one,
   because a mute sent from a spawned task can overtake an unmute awaited inline.
7. **Held chunks** (`HELD_LIMIT`, 1 MiB). While a viewer's view is being drawn its chunks are
   held, then those after the view's seq are sent: the client sees the view, then exactly the
   chunks after it. Past `HELD_LIMIT` the held chunks are dropped and the view is asked again
   (once the connection has drained), since the one in flight may already be too old.

How they interact: 1 and 2 only ever block the shell (nothing is lost between host and
supervisor); 3, 5 and 7 only ever drop chunks that a fresh view replaces; 4 is the one link from
a viewer back to the shell, and only the controller has it, so a slow phone watching never
slows the person typing; 6 stops 1-5 from doing any work while nobody watches live.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from enum import Enum
from typing import Generic, TypeVar

from forge.supervisor.socket.outbound import TERMINAL_LIMIT

WATCHER_LIMIT = TERMINAL_LIMIT
"""A watcher's chunk backlog bound: past it, a fresh view replaces the dropped chunks."""
CONTROLLER_LIMIT = 16 * 1024 * 1024
"""The controller's chunk backlog bound (above what can arrive after `FLOW_HIGH`)."""
FLOW_HIGH = 1024 * 1024
FLOW_LOW = 256 * 1024
"""The controller's unsent bytes above which its host stops reading the PTY, and below which it
reads again."""
HELD_LIMIT = TERMINAL_LIMIT
"""Chunks held for a viewer waiting on its view; past this the view is asked again."""

K = TypeVar("K", bound=Hashable)
"""What a viewer is known by (the supervisor's `Connection`; anything hashable in tests)."""


class Route(Enum):
    """What to do with one chunk for one viewer."""

    SEND = "send"
    HOLD = "hold"
    """Kept (or dropped, past `HELD_LIMIT`) until the viewer's view is drawn."""
    SKIP = "skip"
    """The viewer takes no chunks now (paused, or stale until its fresh view)."""


SEND, HOLD, SKIP = Route.SEND, Route.HOLD, Route.SKIP
"""Module constants: `route` runs per chunk per viewer, and an enum attribute costs more."""


@dataclass(eq=False, slots=True)
class ViewerFlow:
    """One viewer's flow state."""

    paused: bool = False
    stale: bool = False
    """Fell behind: its chunks are dropped until its backlog drains and a fresh view goes out."""
    syncing: bool = True
    """Waiting for a fresh view: chunks are held, not sent, until the view goes out."""
    held: list[tuple[int, bytes]] = field(default_factory=list)
    """Chunks that arrived while syncing, sent after the view if newer than its seq."""
    held_bytes: int = 0
    held_lost: bool = False
    """Held chunks overflowed: the view just requested is stale, ask again."""
    acking: bool = False
    """Its page reports the seq it has parsed up to (`terminal_ack`)."""
    parsed: int = 0
    """The seq its page has parsed up to, as far as known (an ack, or its last view's seq)."""

    @property
    def live(self) -> bool:
        """Takes frames live, now or once its view is drawn."""
        return not self.paused and not self.stale

    def route(self, seq: int, chunk: bytes) -> Route:
        """A chunk arrived; holding it happens here."""
        if self.paused or self.stale:
            return SKIP
        if self.syncing:
            if self.held_bytes + len(chunk) > HELD_LIMIT:
                self.held, self.held_bytes, self.held_lost = [], 0, True
            else:
                self.held.append((seq, chunk))
                self.held_bytes += len(chunk)
            return HOLD
        return SEND

    def asking_view(self) -> None:
        """A view is being asked of the host: chunks from now on are held for it."""
        self.syncing = True
        self.held_lost = False

    def view_drawn(self, seq: int) -> list[bytes]:
        """The view at `seq` went out: live again; the held chunks to send after it."""
        held, self.held, self.held_bytes = self.held, [], 0
        self.syncing = False
        self.parsed = max(self.parsed, seq)
        return [chunk for chunk_seq, chunk in held if chunk_seq > seq]

    def acked(self, seq: int) -> bool:
        """Its page has parsed every chunk up to `seq`: whether that is news (its first ack, or
        a newer seq)."""
        news = not self.acking or seq > self.parsed
        self.acking = True
        self.parsed = max(self.parsed, seq)
        return news

    def drained(self) -> None:
        """The stale viewer's backlog was written: it is live again (its view comes next)."""
        self.stale = False

    def overflowed(self) -> bool:
        """Its backlog overflowed (its waiting chunks are gone): True when a resync must start
        (once its backlog has drained), False when one already waits."""
        if self.stale:
            return False
        self.stale = True
        return True


def chunk_limit(*, controls: bool) -> int:
    """The backlog bound of a viewer's chunks (3 and 5)."""
    return CONTROLLER_LIMIT if controls else WATCHER_LIMIT


@dataclass(frozen=True, slots=True)
class Pace:
    """Tell the host whether the controller's page paces the shell (numbered as `Mute` is), and
    from which seq on what it sends is unparsed."""

    paced: bool
    epoch: int
    parsed: int


@dataclass(frozen=True, slots=True)
class Mute:
    """Tell the host whether it sends frames, numbered so only the newest decision applies."""

    muted: bool
    epoch: int


@dataclass(eq=False)
class TerminalFlow(Generic[K]):
    """One terminal's flow: its viewers' states, the mute told to the host, the throttle."""

    viewers: dict[K, ViewerFlow] = field(default_factory=dict)
    muted: bool = False
    """The host was last told that no viewer takes frames live (so it sends none)."""
    mute_epoch: int = 0
    throttled: bool = False
    """The host was told to stop reading for the controller, and not yet to read again."""
    paced: bool = False
    """The host was last told that the controller's page paces the shell."""
    pace_epoch: int = 0
    stopped: bool = False
    """The host is gone or closing: nothing more is told to it."""

    def attach(self, key: K) -> ViewerFlow:
        viewer = self.viewers[key] = ViewerFlow()
        return viewer

    def detach(self, key: K) -> None:
        self.viewers.pop(key, None)

    def mute(self) -> Mute | None:
        """The decision to send the host, when whether any viewer takes frames live changed."""
        live = any(viewer.live for viewer in self.viewers.values())
        if live != self.muted or self.stopped:
            return None
        self.muted = not live
        self.mute_epoch += 1
        return Mute(self.muted, self.mute_epoch)

    def pace(self, controller: ViewerFlow | None) -> Pace | None:
        """The decision to send the host, when whether the controller's page paces the shell
        changed: it does while it acks and takes frames live."""
        paced = controller is not None and controller.acking and controller.live
        if paced == self.paced or self.stopped:
            return None
        self.paced = paced
        self.pace_epoch += 1
        return Pace(paced, self.pace_epoch, controller.parsed if controller is not None else 0)

    def throttle(self, controller_backlog: int | None) -> bool:
        """The controller's unsent bytes of this terminal (None: no controller) after a chunk:
        True when the host must stop reading now (then `throttle_ended` once it reads again)."""
        if self.throttled or controller_backlog is None:
            return False
        if controller_backlog < FLOW_HIGH:
            return False
        self.throttled = True
        return True

    def throttle_ended(self) -> None:
        self.throttled = False
