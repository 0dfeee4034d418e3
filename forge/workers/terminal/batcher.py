"""When PTY output leaves the host: a pure policy, fed reads and the time, yielding kind-4 frames.

A keystroke's echo must not wait, while a flood must travel in big frames, because each frame
costs a ZMQ hop, a WebSocket write and a client parse. So: output that starts after a quiet spell
goes out as soon as the PTY is drained (`drained`); output that keeps coming (a batch starting
within `quiet` of the last frame) is batched up to
`max_delay` or `max_bytes`. The caller reads until the PTY would block, calling `push` per read
and `drained` at the end, then arms one timer for `deadline()` and calls `expire(now)` on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from forge.wire.binary import TERMINAL_OUTPUT_HEADER, Kind

MAX_DELAY = 0.002
"""Seconds the first byte of a batch may wait for company."""
MAX_BYTES = 64 * 1024
"""A batch this big goes out without waiting for the deadline."""
QUIET = 0.001
"""A batch starting this long after the last frame is interactive (an echo, a prompt): it goes
as soon as the PTY is drained. Measured from the last frame sent, so a fast typist's echoes stay
immediate while a flood's reads, which follow each frame at once, are batched."""
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
    quiet: float = QUIET
    seq: int = 0
    """The last sequence handed out; the next frame carries seq + 1."""
    _chunks: list[bytes] = field(default_factory=list)
    _size: int = 0
    _started: float = 0.0
    _last_frame: float = float("-inf")
    _after_quiet: bool = False

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
            self._after_quiet = now - self._last_frame >= self.quiet
        self._chunks.append(data)
        self._size += len(data)
        return [self._frame(now)] if self._size >= self.max_bytes else []

    def drained(self, now: float) -> list[Frame]:
        """The PTY has nothing more right now: a batch that began after quiet goes at once."""
        return [self._frame(now)] if self._chunks and self._after_quiet else []

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
        self._last_frame = now
        self.seq = self.seq % (SEQ_LIMIT - 1) + 1
        header = TERMINAL_OUTPUT_HEADER.pack(Kind.TERMINAL_OUTPUT, self.terminal, self.seq)
        data = self._chunks[0] if len(self._chunks) == 1 else b"".join(self._chunks)
        self._chunks.clear()
        self._size = 0
        return Frame(self.seq, data, header + data)
