"""Feeds the screen model beside the hot path: bounded backlog, skip to the tail, exact seq.

The model (xterm.js in a process of its own, `model.ScreenModel`) parses some 6-50 MB/s, a
flood arrives at 100 MB/s, and only a viewer that attaches (or resumes, or fell behind) reads
the model: so frames are queued here as they leave, and `feed` hands the model a slice when the
host has time. When the backlog passes `backlog_limit` its head is dropped, keeping at least
`tail` bytes (the last tens of KiB redraw a screen), with the head's mode switches replayed so
modes survive. `catch_up` hands over what is left before a view is asked, so `seq` is exactly
the last frame the view reflects; a resize is sent after the bytes written before it, so the
model reflows what the shell wrote at the old size.
"""

from __future__ import annotations

from collections import deque

from forge.workers.terminal.model import ScreenModel
from forge.workers.terminal.modes import ModeTracker

BACKLOG_LIMIT = 192 * 1024
"""Unsent bytes allowed before the head is skipped."""
TAIL = 48 * 1024
"""Bytes kept when skipping: enough to repaint a large screen."""
RESTART_PARSER = b"\x18"
"""CAN: ends whatever sequence the model's parser was in when bytes after it were skipped."""


class ScreenFeeder:
    """The screen model and the frames not yet handed to it."""

    def __init__(
        self, model: ScreenModel, *, backlog_limit: int = BACKLOG_LIMIT, tail: int = TAIL
    ) -> None:
        self.model = model
        self.backlog_limit = backlog_limit
        self.tail = tail
        self.seq = 0
        """The last frame whose bytes are all with the model (sent, or skipped with modes kept)."""
        self.skipped_bytes = 0
        """Bytes never parsed, for the host's stats."""
        self._backlog: deque[tuple[int, bytes]] = deque()
        self._offset = 0
        """How far into the backlog's first frame the model has been sent."""
        self._pending = 0
        self._modes = ModeTracker()

    @property
    def pending(self) -> int:
        """Bytes queued but not sent to the model."""
        return self._pending

    def append(self, seq: int, data: bytes) -> None:
        """A frame left the host: queue its bytes, skipping the head if the backlog is too long."""
        self._backlog.append((seq, data))
        self._pending += len(data)
        if self._pending > self.backlog_limit:
            self._skip()

    def feed(self, budget: int) -> int:
        """Send up to `budget` bytes to the model; returns how many were sent."""
        fed = 0
        while self._backlog and fed < budget:
            seq, data = self._backlog[0]
            piece = data[self._offset : self._offset + budget - fed]
            self.model.write(piece)
            fed += len(piece)
            self._offset += len(piece)
            self._pending -= len(piece)
            if self._offset >= len(data):
                self._backlog.popleft()
                self._offset = 0
                self.seq = seq
        return fed

    def catch_up(self) -> int:
        """Send everything queued, skipping to the tail first if more than two tails wait.

        Returns the seq a view asked now reflects. The bound keeps a view after a flood quick.
        """
        if self._pending > 2 * self.tail:
            self._skip()
        self.feed(self._pending)
        return self.seq

    def resize(self, columns: int, lines: int) -> None:
        """Resize the model after what was queued (written for the old size, and reflowed)."""
        self.catch_up()
        self.model.resize(columns, lines)

    def replace(self, model: ScreenModel) -> None:
        """A fresh model (the last one failed): it starts blank, with what is queued to come."""
        self.model = model

    def _skip(self) -> None:
        """Drop the head down to about `tail` bytes, starting the rest at a safe boundary."""
        while self._backlog and self._pending - self._head_unread() >= self.tail:
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
        self.model.write(RESTART_PARSER + self._modes.replay())

    def _head_unread(self) -> int:
        return len(self._backlog[0][1]) - self._offset


def _safe_start(data: bytes, start: int) -> int:
    """The first line start or escape at or after `start`: a place a parser can begin."""
    found = [i for i in (data.find(b"\n", start), data.find(b"\x1b", start)) if i != -1]
    if not found:
        return start
    index = min(found)
    return index + 1 if data[index : index + 1] == b"\n" else index
