"""A take's audio cut into the segments the endpointer closes. Pure: bytes in, actions out.

`Segmenter` reframes what arrives into 20 ms frames, asks the classifier about each, feeds the
endpointer, and turns a closed segment's frame range into its samples (`Segment`). It keeps the
take's audio from the oldest byte a segment may still need; what every segment has passed is let
go. `open_audio` is the open segment so far, for a partial decode.
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
    Timing,
)
from forge.workers.dictate.vad import Classifier

PARTIAL_EVERY_FRAMES = 50
"""A partial decode is due after this much new audio in the open segment (about once a second)."""


@dataclass(frozen=True, slots=True)
class Segment:
    index: int
    start_ms: int
    end_ms: int
    pcm: bytes


SegmenterAction = PhaseChanged | Level | Segment


class Segmenter:
    def __init__(self, classifier: Classifier, timing: Timing | None = None) -> None:
        self._classifier = classifier
        self._reframer = Reframer()
        self.endpointer = Endpointer(timing or Timing())
        self._audio = bytearray()
        self._base = 0
        """The frame index of `_audio`'s first byte."""
        self._segments = 0
        self._partial_mark = 0

    @property
    def frames(self) -> int:
        return self.endpointer.frames

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
        actions.extend(self._act(a) for a in self.endpointer.finish())
        return actions

    def partial_due(self) -> bool:
        """A voice is speaking in an open segment with at least a second more of it than the last
        partial read. Not in a pause: a pause is where a take is stopped, and a partial still
        decoding then would hold the lane the take's last segment waits on."""
        start = self.endpointer.open_segment_start
        if start is None or self.endpointer.phase is not Phase.SPEECH:
            return False
        return self.frames - max(start, self._partial_mark) >= PARTIAL_EVERY_FRAMES

    def open_audio(self) -> bytes:
        """The open segment so far ("" when none is open); marks a partial as read up to now."""
        start = self.endpointer.open_segment_start
        if start is None:
            return b""
        self._partial_mark = self.frames
        return bytes(self._audio[(start - self._base) * FRAME_BYTES :])

    def _frame(self, frame: bytes) -> list[SegmenterAction]:
        """One frame; a take's last part frame is judged padded with silence but kept as it is
        (four padded milliseconds once turned tiny.en's words for a whole clip into others)."""
        self._audio += frame
        whole = frame.ljust(FRAME_BYTES, b"\0")
        square = mean_square(whole)
        actions = [
            self._act(a) for a in self.endpointer.push(self._classifier.voiced(whole), square)
        ]
        self._let_go()
        return actions

    def _act(self, action: PhaseChanged | Level | SegmentClosed) -> SegmenterAction:
        if not isinstance(action, SegmentClosed):
            return action
        pcm = bytes(
            self._audio[
                (action.start - self._base) * FRAME_BYTES : (action.end - self._base) * FRAME_BYTES
            ]
        )
        segment = Segment(self._segments, action.start * FRAME_MS, action.end * FRAME_MS, pcm)
        self._segments += 1
        self._partial_mark = 0
        return segment

    def _let_go(self) -> None:
        """Drop audio no segment can reach: before the open segment, else before the preroll."""
        start = self.endpointer.open_segment_start
        keep_from = (
            start
            if start is not None
            else self.frames
            - self.endpointer.timing.preroll_frames
            - self.endpointer.timing.onset_window
        )
        if keep_from - self._base > 500:
            del self._audio[: (keep_from - self._base) * FRAME_BYTES]
            self._base = keep_from
