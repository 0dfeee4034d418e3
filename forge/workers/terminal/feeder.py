"""Feeds the screen model beside the hot path: bounded backlog, skip to the tail, exact seq.

pyte parses 0.3-1.2 MB/s, a flood arrives at 100 MB/s: the model can never keep up, and it does
not need to: only a viewer that attaches (or resumes, or fell behind) reads it. Frames are queued
here as they leave; `feed` parses a slice when the host has time; when the backlog passes
`backlog_limit` its head is dropped, keeping at least `tail` bytes (the last tens of KiB redraw a
24-line screen), with the head's mode switches replayed so modes survive. `catch_up` parses what
is left before a view is rendered, so `seq` is exactly the last frame the screen reflects.
"""

from __future__ import annotations

from collections import deque

import pyte

from forge.workers.terminal.modes import ModeTracker
from forge.workers.terminal.screen import TerminalScreen

BACKLOG_LIMIT = 192 * 1024
"""Unparsed bytes allowed before the head is skipped."""
TAIL = 48 * 1024
"""Bytes kept when skipping: enough to repaint a large screen, small enough to parse in ~0.1 s."""


class ScreenFeeder:
    """The screen model and the frames not yet parsed into it."""

    def __init__(
        self, screen: TerminalScreen, *, backlog_limit: int = BACKLOG_LIMIT, tail: int = TAIL
    ) -> None:
        self.screen = screen
        self.backlog_limit = backlog_limit
        self.tail = tail
        self.seq = 0
        """The last frame whose bytes are all in the screen (parsed, or skipped with modes kept)."""
        self.skipped_bytes = 0
        """Bytes never parsed, for the host's stats."""
        self._stream: pyte.ByteStream | None = pyte.ByteStream(screen)
        """The parser; None after a skip until the next parse needs a fresh one."""
        self._backlog: deque[tuple[int, bytes]] = deque()
        self._offset = 0
        """How far into the backlog's first frame the parser has read."""
        self._pending = 0
        self._modes = ModeTracker()

    @property
    def pending(self) -> int:
        """Bytes queued but not parsed."""
        return self._pending

    def append(self, seq: int, data: bytes) -> None:
        """A frame left the host: queue its bytes, skipping the head if the backlog is too long."""
        self._backlog.append((seq, data))
        self._pending += len(data)
        if self._pending > self.backlog_limit:
            self._skip()

    def feed(self, budget: int) -> int:
        """Parse up to `budget` bytes; returns how many were parsed."""
        fed = 0
        if not self._backlog:
            return fed
        if self._stream is None:
            self._stream = pyte.ByteStream(self.screen)
        stream = self._stream
        while self._backlog and fed < budget:
            seq, data = self._backlog[0]
            piece = data[self._offset : self._offset + budget - fed]
            stream.feed(piece)
            fed += len(piece)
            self._offset += len(piece)
            self._pending -= len(piece)
            if self._offset >= len(data):
                self._backlog.popleft()
                self._offset = 0
                self.seq = seq
        return fed

    def catch_up(self) -> int:
        """Parse everything queued, skipping to the tail first if more than two tails wait.

        Returns the screen's seq. The bound keeps a view after a flood to about 0.1 s of parsing.
        """
        if self._pending > 2 * self.tail:
            self._skip()
        self.feed(self._pending)
        return self.seq

    def resize(self, columns: int, lines: int) -> None:
        """Resize the model; what was queued was written for the old size, so it is parsed first."""
        self.catch_up()
        self.screen.resize(lines, columns)

    def _skip(self) -> None:
        """Drop the head down to about `tail` bytes, starting the rest at a safe boundary."""
        while (
            self._backlog and self._pending - (len(self._backlog[0][1]) - self._offset) >= self.tail
        ):
            seq, data = self._backlog.popleft()
            self._modes.scan(data[self._offset :])
            self._pending -= len(data) - self._offset
            self.skipped_bytes += len(data) - self._offset
            self._offset = 0
            self.seq = seq
        if self._backlog:
            _, data = self._backlog[0]
            cut = _safe_start(data, self._offset)
            self._modes.scan(data[self._offset : cut])
            self._pending -= cut - self._offset
            self.skipped_bytes += cut - self._offset
            self._offset = cut
        self._modes.apply(self.screen)
        # The parser may be mid-sequence in bytes it will never see the end of; a flood skips
        # every other frame, so the fresh parser is built only when something is parsed.
        self._stream = None

    def _head_unread(self) -> int:
        return len(self._backlog[0][1]) - self._offset


def _safe_start(data: bytes, start: int) -> int:
    """The first line start or escape at or after `start`: a place a parser can begin."""
    found = [i for i in (data.find(b"\n", start), data.find(b"\x1b", start)) if i != -1]
    if not found:
        return start
    index = min(found)
    return index + 1 if data[index : index + 1] == b"\n" else index
