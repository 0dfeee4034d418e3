"""When PTY output leaves the host: a pure policy, fed reads and the time, yielding kind-4 frames.

A keystroke's echo must not wait, while a flood must travel in big frames, because each frame
costs a ZMQ hop, a WebSocket write and a client parse. So the rate decides: while the frames of
the current `window` hold fewer than `interactive_bytes`, whatever the PTY had goes out as soon
as it is drained (`drained`: echoes, prompts, a fast typist's keys); past that the output is a
flood and is batched up to `max_delay` or `max_bytes`. The caller reads until the PTY would
block, calling `push` per read and `drained` at the end, then arms one timer for `deadline()`
and calls `expire(now)` on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from forge.wire.binary import TERMINAL_OUTPUT_HEADER, Kind

MAX_DELAY = 0.002
"""Seconds the first byte of a batch may wait for company."""
MAX_BYTES = 64 * 1024
"""A batch this big goes out without waiting for the deadline."""
WINDOW = 0.002
INTERACTIVE_BYTES = 4096
"""Output under this many bytes per `WINDOW` seconds (2 MB/s) is interactive and is not held."""
SEQ_LIMIT = 2**32
"""Sequences are u32 on the wire; after the last one they start again at 1 (0 means 'nothing')."""


@dataclass(slots=True)
class Frame:
    """One kind-4 frame ready for the wire, and the raw bytes it carries (for the screen model)."""

    seq: int
    data: bytes
    wire: bytes


@dataclass
class OutputBatcher:
    """Collects PTY reads of one terminal into numbered kind-4 frames."""

    terminal: int
    max_delay: float = MAX_DELAY
    max_bytes: int = MAX_BYTES
    window: float = WINDOW
    interactive_bytes: int = INTERACTIVE_BYTES
    seq: int = 0
    """The last sequence handed out; the next frame carries seq + 1."""
    _chunks: list[bytes] = field(default_factory=list)
    _size: int = 0
    _started: float = 0.0
    _window_start: float = float("-inf")
    _window_bytes: int = 0

    @property
    def pending(self) -> int:
        """Bytes read but not yet framed."""
        return self._size

    def deadline(self) -> float | None:
        """When the pending batch must go out, or None when nothing waits."""
        return self._started + self.max_delay if self._chunks else None

    def push(self, data: bytes, now: float) -> list[Frame]:
        """Take one read; returns the frame that must go now (a full batch) or nothing."""
        if not self._chunks:
            self._started = now
        self._chunks.append(data)
        self._size += len(data)
        return [self._frame(now)] if self._size >= self.max_bytes else []

    def drained(self, now: float) -> list[Frame]:
        """The PTY has nothing more right now: interactive output goes at once."""
        if not self._chunks:
            return []
        recent = self._window_bytes if now - self._window_start < self.window else 0
        return [self._frame(now)] if recent + self._size <= self.interactive_bytes else []

    def expire(self, now: float) -> list[Frame]:
        """The timer fired: the batch goes if its deadline has passed."""
        deadline = self.deadline()
        if deadline is None or now < deadline:
            return []
        return [self._frame(now)]

    def flush(self, now: float) -> list[Frame]:
        """Everything pending goes now (the shell exited)."""
        return [self._frame(now)] if self._chunks else []

    def _frame(self, now: float) -> Frame:
        if now - self._window_start >= self.window:
            self._window_start, self._window_bytes = now, 0
        self._window_bytes += self._size
        self.seq = self.seq % (SEQ_LIMIT - 1) + 1
        header = TERMINAL_OUTPUT_HEADER.pack(Kind.TERMINAL_OUTPUT, self.terminal, self.seq)
        data = self._chunks[0] if len(self._chunks) == 1 else b"".join(self._chunks)
        self._chunks.clear()
        self._size = 0
        return Frame(self.seq, data, header + data)
