"""A seat's numbered stream: its counter, epoch and bounded window of recent frames (S20-S25).

Every frame emitted for a seat takes the next number on the seat's own counter, shared by all
connections. The window keeps the newest frames, at most `MAX_FRAMES` or `MAX_BYTES` of encoded
updates, whichever bites first (O-S8), so `seat_range` can repair a gap a client read.

A window fills to its bound over an hour or more of a busy seat and `seat_range` is rare, so
what it holds is kept small: updates are deflated `BLOCK_FRAMES` at a time, together. A seat's
updates are mostly alike (process rows, states), so a block deflates to little more than one
update does alone: a held frame of process rows took 127 bytes against 414 deflated alone
(tracemalloc, docs/benchmarks.md).
The bounds stay exact to the frame: frames leave the front of the oldest block one by one, and
the block's memory goes when its last frame does.
"""

from __future__ import annotations

import zlib
from array import array
from collections import deque
from dataclasses import dataclass, field

import msgspec

from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat

MAX_FRAMES = 1024
MAX_BYTES = 8 * 1024 * 1024

BLOCK_FRAMES = 32
"""Updates deflated together: enough for a run of alike updates to cost little more than one."""

DEFLATE_LEVEL = 1
"""zlib's fastest level: a window is written far more than read."""


@dataclass(slots=True)
class _Block:
    """Consecutive frames: the first's number, then per frame its span, whole-frame size and
    the end of its update in the updates' concatenation."""

    first_seq: int
    spans: array[int] = field(default_factory=lambda: array("I"))
    sizes: array[int] = field(default_factory=lambda: array("I"))
    ends: array[int] = field(default_factory=lambda: array("I"))
    packed: bytes = b""
    """The updates deflated, once the block is sealed."""
    pending: list[bytes] = field(default_factory=list)
    """The updates of the block still filling."""
    dropped: int = 0
    """Frames at the front that have left the window."""

    def __len__(self) -> int:
        return len(self.spans)

    def seal(self) -> None:
        self.packed = zlib.compress(b"".join(self.pending), DEFLATE_LEVEL)
        self.pending = []

    @property
    def stored(self) -> int:
        return len(self.packed) if not self.pending else self.ends[-1]

    def frames(self) -> list[tuple[int, int, msgspec.Raw]]:
        """The held frames as (seq, span, update), oldest first."""
        updates = zlib.decompress(self.packed) if not self.pending else b"".join(self.pending)
        seq, start, held = self.first_seq, 0, []
        for index, (span, end) in enumerate(zip(self.spans, self.ends, strict=True)):
            if index >= self.dropped:
                held.append((seq, span, msgspec.Raw(updates[start:end])))
            seq, start = seq + span, end
        return held

    def first_held_seq(self) -> int:
        return self.first_seq + sum(self.spans[: self.dropped])

    def next_seq(self) -> int:
        """The number after the block's last frame."""
        return self.first_seq + sum(self.spans)


class SeatWindow:
    """The counter and window of one seat-run; `epoch` names the run (O-S6)."""

    def __init__(
        self, seat: Seat, epoch: str, *, max_frames: int = MAX_FRAMES, max_bytes: int = MAX_BYTES
    ) -> None:
        self.seat = seat
        self.epoch = epoch
        self.next_seq = 1
        """What a session snapshot's `header.seq` says: the number the next frame will carry."""
        self._max_frames = max_frames
        self._max_bytes = max_bytes
        self._blocks: deque[_Block] = deque()
        self._frames = 0
        self._bytes = 0

    def append(self, update: msgspec.Raw, size: int, span: int = 1) -> int:
        """Number one frame (`span` numbers) whose update is the JSON `update` (as the live
        frame embeds it), and keep it; returns its `seq`. `size` is the whole frame's length."""
        seq = self.next_seq
        self.next_seq += span
        block = self._blocks[-1] if self._blocks else None
        if block is None or len(block) == BLOCK_FRAMES:
            if block is not None:
                block.seal()
            block = _Block(seq)
            self._blocks.append(block)
        body = bytes(update)
        block.pending.append(body)
        block.spans.append(span)
        block.sizes.append(size)
        block.ends.append((block.ends[-1] if block.ends else 0) + len(body))
        self._frames += 1
        self._bytes += size
        while self._frames > self._max_frames or (
            self._bytes > self._max_bytes and self._frames > 1
        ):
            self._drop_oldest()
        return seq

    def _drop_oldest(self) -> None:
        oldest = self._blocks[0]
        self._bytes -= oldest.sizes[oldest.dropped]
        self._frames -= 1
        oldest.dropped += 1
        if oldest.dropped == len(oldest):
            self._blocks.popleft()

    @property
    def held(self) -> tuple[int, int]:
        """Frames held and the bytes their updates take here: the ring fills to its bound and
        stays there."""
        return self._frames, sum(block.stored for block in self._blocks)

    @property
    def oldest_held(self) -> int:
        """The first number the window can still answer (`next_seq` when it holds nothing)."""
        return self._blocks[0].first_held_seq() if self._blocks else self.next_seq

    def range(self, epoch: str | None, first: int, last: int) -> list[tuple[int, msgspec.Raw]]:
        """The frames numbered `first..=last`, oldest first, or a refusal naming seat_range."""
        if epoch != self.epoch:
            raise self._refuse(f"epoch {epoch} is not the seat's current epoch {self.epoch}")
        if first < 1 or first > last:
            raise self._refuse(f"range {first}..={last} is empty or starts below 1")
        if last >= self.next_seq:
            raise self._refuse(f"frame {last} has not been sent; the next is {self.next_seq}")
        if last - first + 1 > self._max_frames:
            raise self._refuse(f"a range covers at most {self._max_frames} frames")
        if first < self.oldest_held:
            raise self._refuse(
                f"frames below {self.oldest_held} are no longer held; read the seat again"
            )
        return [
            (seq, update)
            for block in self._blocks
            if block.first_seq <= last and block.next_seq() > first
            for seq, span, update in block.frames()
            if seq + span > first and seq <= last
        ]

    def _refuse(self, why: str) -> ClientRefusal:
        return ClientRefusal("seat_range", why, self.seat)
