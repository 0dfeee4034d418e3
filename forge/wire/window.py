"""A seat's numbered stream: its counter, epoch and bounded window of recent frames (S20-S25).

Every frame emitted for a seat takes the next number on the seat's own counter, shared by all
connections. The window keeps the newest frames, at most `MAX_FRAMES` or `MAX_BYTES` of encoded
updates, whichever bites first (O-S8), so `seat_range` can repair a gap a client read.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat

MAX_FRAMES = 1024
MAX_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class NumberedFrame:
    seq: int
    span: int
    update: Any
    size: int


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

    def append(self, update: Any, size: int, span: int = 1) -> int:
        """Number one frame (`span` numbers) and keep it; returns its `seq`."""
        seq = self.next_seq
        self.next_seq += span
        self._frames.append(NumberedFrame(seq, span, update, size))
        self._bytes += size
        while len(self._frames) > self._max_frames or (
            self._bytes > self._max_bytes and len(self._frames) > 1
        ):
            self._bytes -= self._frames.popleft().size
        return seq

    @property
    def oldest_held(self) -> int:
        """The first number the window can still answer (`next_seq` when it holds nothing)."""
        return self._frames[0].seq if self._frames else self.next_seq

    def range(self, epoch: str | None, first: int, last: int) -> list[tuple[int, Any]]:
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
            (frame.seq, frame.update)
            for frame in self._frames
            if frame.seq + frame.span > first and frame.seq <= last
        ]

    def _refuse(self, why: str) -> ClientRefusal:
        return ClientRefusal("seat_range", why, self.seat)
