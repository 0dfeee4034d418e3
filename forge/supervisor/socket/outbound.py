"""One connection's outbound backlog, with a drop policy per stream (pure: no I/O, no clock).

Everything a connection is sent waits here in write order, and one writer drains it. The policy
of an entry's stream decides what happens when the peer reads slower than we produce:

- control (JSON, and any frame the protocol may not lose) is never dropped; past
  `control_limit` bytes the backlog reports overflow and the connection must be closed;
- latest (a browser tab's frames): a newer frame replaces the one still waiting, in its place,
  so a slow viewer gets the newest frame rather than a queue;
- bounded (a terminal's chunks): past the stream's byte limit every waiting entry of that
  stream is removed and its overflow callback runs once (the terminal host then sends the viewer
  a fresh screen);
- recent (a tab's sound): the stream keeps its newest `limit` bytes waiting; past it the oldest
  waiting entries are dropped, as many as the new one needs, so a viewer that falls behind loses
  the sound's oldest frames, never a growing queue, and a burst loses only its excess.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from forge.errors import PeerError

CONTROL_LIMIT = 64 * 1024 * 1024
"""Bytes of unsent control frames past which a connection is closed rather than dropping one."""

TERMINAL_LIMIT = 1024 * 1024
"""~1 MiB of a terminal's unsent chunks, past which a viewer is dropped to a fresh screen."""

AUDIO_LIMIT = 40 * 1024
"""~200 ms of a tab's unsent kind-2 frames (3854 bytes per 20 ms), past which what waits is
dropped: sound that arrives late is worth less than a gap, and the picture keeps its pace."""


@dataclass(slots=True, eq=False)
class Entry:
    """One frame waiting to be written; `stream` is None for control frames."""

    data: bytes
    text: bool
    stream: Hashable | None = None
    dropped: bool = False
    keepalive: bool = False
    """A pong: written like any control frame, but not progress for the watchdog."""


@dataclass(slots=True)
class _Stream:
    limit: int | None
    on_overflow: Callable[[], None] | None
    entries: deque[Entry] = field(default_factory=deque)
    pending: int = 0


class ControlOverflow(PeerError):
    """The peer cannot take control frames fast enough; the connection must be closed."""


class OutboundBacklog:
    """Write-ordered frames with per-stream policies; `pop` hands the writer the next frame."""

    def __init__(self, *, control_limit: int = CONTROL_LIMIT) -> None:
        self._queue: deque[Entry] = deque()
        self._streams: dict[Hashable, _Stream] = {}
        self._latest: dict[Hashable, Entry] = {}
        self._control_limit = control_limit
        self.pending_bytes = 0
        """Bytes waiting across every stream (what a producer's backpressure reads)."""

    def __len__(self) -> int:
        return len(self._queue)

    def control(self, data: bytes, *, text: bool, keepalive: bool = False) -> None:
        """A frame that must arrive; raises ControlOverflow when the backlog is past its limit."""
        if self.pending_bytes + len(data) > self._control_limit:
            raise ControlOverflow(
                f"{self.pending_bytes} bytes unsent, over the {self._control_limit}-byte backlog"
            )
        self._push(Entry(data, text, keepalive=keepalive))

    def latest(self, stream: Hashable, data: bytes) -> None:
        """A frame that supersedes the stream's frame still waiting, if any (newest wins)."""
        waiting = self._latest.get(stream)
        if waiting is not None:
            self.pending_bytes += len(data) - len(waiting.data)
            waiting.data = data
            return
        entry = Entry(data, False, stream)
        self._latest[stream] = entry
        self._push(entry)

    def bounded(
        self,
        stream: Hashable,
        data: bytes,
        *,
        limit: int,
        on_overflow: Callable[[], None] | None = None,
    ) -> bool:
        """Queue a chunk of a bounded stream; False (and the stream emptied) when over `limit`."""
        state = self._streams.get(stream)
        if state is None:
            state = self._streams[stream] = _Stream(limit, on_overflow)
        if state.pending + len(data) > limit:
            for entry in state.entries:
                entry.dropped = True
                self.pending_bytes -= len(entry.data)
            del self._streams[stream]
            if on_overflow is not None:
                on_overflow()
            return False
        entry = Entry(data, False, stream)
        state.entries.append(entry)
        state.pending += len(data)
        self._push(entry)
        return True

    def recent(self, stream: Hashable, data: bytes, *, limit: int) -> int:
        """Queue a frame of a stream that keeps only its newest `limit` bytes waiting; the
        number of older frames dropped to make room."""
        state = self._streams.get(stream)
        if state is None:
            state = self._streams[stream] = _Stream(limit, None)
        dropped = 0
        while state.entries and state.pending + len(data) > limit:
            oldest = state.entries.popleft()
            oldest.dropped = True
            state.pending -= len(oldest.data)
            self.pending_bytes -= len(oldest.data)
            dropped += 1
        entry = Entry(data, False, stream)
        state.entries.append(entry)
        state.pending += len(data)
        self._push(entry)
        return dropped

    def stream_pending(self, stream: Hashable) -> int:
        """Bytes of `stream` still waiting (a bounded or latest stream)."""
        state = self._streams.get(stream)
        if state is not None:
            return state.pending
        waiting = self._latest.get(stream)
        return len(waiting.data) if waiting is not None else 0

    def pop(self, *, at_most: int | None = None) -> Entry | None:
        """The next frame to write, skipping dropped ones; None when nothing waits, or when the
        next is longer than `at_most` bytes (it stays first)."""
        while self._queue:
            if self._queue[0].dropped:
                self._queue.popleft()
                continue
            if at_most is not None and len(self._queue[0].data) > at_most:
                return None
            entry = self._queue.popleft()
            self.pending_bytes -= len(entry.data)
            if entry.stream is not None:
                self._forget(entry)
            return entry
        return None

    def _push(self, entry: Entry) -> None:
        self._queue.append(entry)
        self.pending_bytes += len(entry.data)

    def _forget(self, entry: Entry) -> None:
        if self._latest.get(entry.stream) is entry:
            del self._latest[entry.stream]
            return
        state = self._streams.get(entry.stream)
        if state is not None and state.entries and state.entries[0] is entry:
            state.entries.popleft()
            state.pending -= len(entry.data)
            if not state.entries:
                del self._streams[entry.stream]
