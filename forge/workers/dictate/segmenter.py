"""A take's audio cut into 20 ms frames, judged, and kept for reading. Pure: bytes in, actions out.

`Segmenter` reframes what arrives into 20 ms frames, asks the take's classifier about each, feeds
the endpointer and says where a voice spoke (`Segment`, in ms: opened, then closed). It keeps the
take's audio from where the take says it may still read (`let_go`) and hands out any stretch of
it (`audio`).
"""

from __future__ import annotations

from dataclasses import dataclass

from forge.workers.dictate.audio import FRAME_BYTES, FRAME_MS, Reframer, mean_square
from forge.workers.dictate.endpointer import (
    Endpointer,
    Level,
    Phase,
    PhaseChanged,
    SegmentClosed,
    SegmentOpened,
    Timing,
)
from forge.workers.dictate.vad import Classifier

PARTIAL_EVERY_FRAMES = 50
"""A partial decode is due after this much new audio in the open segment (about once a second)."""
LET_GO_FRAMES = 500
"""Audio no read can reach is dropped in pieces of at least 10 s."""


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of the take a voice spoke in: just opened (`end_ms` None), or closed."""

    start_ms: int
    end_ms: int | None = None


SegmenterAction = PhaseChanged | Level | Segment


class Segmenter:
    def __init__(self, classifier: Classifier, timing: Timing | None = None) -> None:
        self._classifier = classifier
        self._reframer = Reframer()
        self.endpointer = Endpointer(timing or Timing())
        self._audio = bytearray()
        self._base = 0
        """The frame index of `_audio`'s first byte."""
        self._partial_mark = 0

    @property
    def frames(self) -> int:
        return self.endpointer.frames

    @property
    def heard_ms(self) -> int:
        """How much of the take has arrived."""
        return self.frames * FRAME_MS

    def push(self, data: bytes) -> list[SegmenterAction]:
        actions: list[SegmenterAction] = []
        for frame in self._reframer.push(data):
            actions.extend(self._frame(frame))
        return actions

    def finish(self) -> list[SegmenterAction]:
        """The take ended: the part frame, then the open segment closed."""
        actions: list[SegmenterAction] = []
        rest = self._reframer.flush()
        if rest is not None:
            actions.extend(self._frame(rest))
        actions.extend(_in_ms(a) for a in self.endpointer.finish())
        return actions

    def partial_due(self) -> bool:
        """A voice is speaking in an open segment with at least a second more of it than the last
        partial read. Not in a pause: a pause is where a take is stopped, and a partial still
        decoding then would hold the lane the take's last read waits on."""
        start = self.endpointer.open_segment_start
        if start is None or self.endpointer.phase is not Phase.SPEECH:
            return False
        if self.frames - max(start, self._partial_mark) < PARTIAL_EVERY_FRAMES:
            return False
        self._partial_mark = self.frames
        return True

    def audio(self, start_ms: int, end_ms: int) -> bytes:
        """The take's samples from `start_ms` to `end_ms` (what was let go of reads as none)."""
        first = max(start_ms // FRAME_MS - self._base, 0) * FRAME_BYTES
        last = max(end_ms // FRAME_MS - self._base, 0) * FRAME_BYTES
        return bytes(self._audio[first:last])

    def let_go(self, before_ms: int) -> None:
        """No read will reach before `before_ms`: its audio may go (in pieces of 10 s or more)."""
        keep_from = before_ms // FRAME_MS
        if keep_from - self._base >= LET_GO_FRAMES:
            del self._audio[: (keep_from - self._base) * FRAME_BYTES]
            self._base = keep_from

    def _frame(self, frame: bytes) -> list[SegmenterAction]:
        """One frame; a take's last part frame is judged padded with silence but kept as it is
        (four padded milliseconds once turned tiny.en's words for a whole clip into others)."""
        self._audio += frame
        whole = frame.ljust(FRAME_BYTES, b"\0")
        verdict = self._classifier.voiced(whole)
        return [_in_ms(a) for a in self.endpointer.push(verdict, mean_square(whole))]


def _in_ms(action: PhaseChanged | Level | SegmentOpened | SegmentClosed) -> SegmenterAction:
    if isinstance(action, SegmentOpened):
        return Segment(action.start * FRAME_MS)
    if isinstance(action, SegmentClosed):
        return Segment(action.start * FRAME_MS, action.end * FRAME_MS)
    return action
