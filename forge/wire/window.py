"""A seat's numbered stream: its counter, epoch and bounded window of recent frames (S20-S25).

Every frame emitted for a seat takes the next number on the seat's own counter, shared by all
connections. The window keeps the newest frames, at most `MAX_FRAMES` or `MAX_BYTES` of encoded
updates, whichever bites first (O-S8), so `seat_range` can repair a gap a client read. It keeps
each update's JSON deflated: a window fills to its bound over an hour or more of a busy seat
(mostly process rows, which deflate about 5x), and `seat_range` is rare.
"""

from __future__ import annotations

import zlib
from collections import deque
from dataclasses import dataclass

import msgspec

from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat

MAX_FRAMES = 1024
MAX_BYTES = 8 * 1024 * 1024


DEFLATE_LEVEL = 1
"""zlib's fastest level: ~5x on process rows already; a window is written far more than read."""


@dataclass(frozen=True, slots=True)
class NumberedFrame:
    seq: int
    span: int
    packed: bytes
    """The update's JSON, deflated."""
    size: int
    """The whole frame's encoded length, which the byte bound counts (O-S8)."""


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
        self._frames: deque[NumberedFrame] = deque()
        self._bytes = 0
        self._stored = 0

    def append(self, update: msgspec.Raw, size: int, span: int = 1) -> int:
        """Number one frame (`span` numbers) whose update is the JSON `update` (as the live
        frame embeds it), and keep it; returns its `seq`. `size` is the whole frame's length."""
        seq = self.next_seq
        self.next_seq += span
        frame = NumberedFrame(seq, span, zlib.compress(update, DEFLATE_LEVEL), size)
        self._frames.append(frame)
        self._bytes += size
        self._stored += len(frame.packed)
        while len(self._frames) > self._max_frames or (
            self._bytes > self._max_bytes and len(self._frames) > 1
        ):
            gone = self._frames.popleft()
            self._bytes -= gone.size
            self._stored -= len(gone.packed)
        return seq

    @property
    def held(self) -> tuple[int, int]:
        """Frames held and the bytes they take here (deflated): the ring fills to its bound and
        stays there."""
        return len(self._frames), self._stored

    @property
    def oldest_held(self) -> int:
        """The first number the window can still answer (`next_seq` when it holds nothing)."""
        return self._frames[0].seq if self._frames else self.next_seq

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
            (frame.seq, msgspec.Raw(zlib.decompress(frame.packed)))
            for frame in self._frames
            if frame.seq + frame.span > first and frame.seq <= last
        ]

    def _refuse(self, why: str) -> ClientRefusal:
        return ClientRefusal("seat_range", why, self.seat)
