"""The endpointer: voiced/unvoiced 20 ms frames in, phases, levels and segments of speech out. Pure.

Phases follow one take: `listening` until a voice starts, `speech` while it lasts, `silence` once
it pauses (the segment is still open and a voice may carry on in it), `transcribing` once the
take is stopped, `done` when its words are back (the worker says that one). A segment opens when
a voice starts and closes after `close_frames` of silence; it is as long as the voice goes on
(long speech is read in Whisper's 30 s windows, `windows.py`, not cut here). Each segment carries
`preroll_frames` before the onset and `postroll_frames` after the last voiced frame: the soft
first and last phonemes webrtcvad calls unvoiced are where a cut-off last word comes from.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import StrEnum


class Phase(StrEnum):
    LISTENING = "listening"
    SPEECH = "speech"
    SILENCE = "silence"
    TRANSCRIBING = "transcribing"
    DONE = "done"


@dataclass(frozen=True, slots=True)
class Timing:
    """The endpointer's bounds, in 20 ms frames."""

    onset_window: int = 6
    onset_voiced: int = 4
    """A voice starts when this many of the last `onset_window` frames are voiced."""
    pause_frames: int = 8
    """This many unvoiced frames in a row turn `speech` into `silence`."""
    close_frames: int = 30
    """This many unvoiced frames in a row close the segment (600 ms)."""
    preroll_frames: int = 15
    postroll_frames: int = 15
    level_frames: int = 5
    """A level is reported every this many frames (100 ms of audio)."""


@dataclass(frozen=True, slots=True)
class PhaseChanged:
    phase: Phase


@dataclass(frozen=True, slots=True)
class Level:
    rms: float
    """Root-mean-square of the last `level_frames` frames, full scale = 1.0."""


@dataclass(frozen=True, slots=True)
class SegmentOpened:
    start: int
    """The frame index of the take it begins at (its preroll included)."""


@dataclass(frozen=True, slots=True)
class SegmentClosed:
    start: int
    end: int
    """Frame indices of the take, end exclusive."""


Action = PhaseChanged | Level | SegmentOpened | SegmentClosed


class Endpointer:
    """One take's frames, one at a time, in order."""

    def __init__(self, timing: Timing = Timing()) -> None:
        self.timing = timing
        self.phase = Phase.LISTENING
        self.frames = 0
        """Frames seen so far (the index the next frame gets)."""
        self._recent: deque[bool] = deque(maxlen=timing.onset_window)
        self._segment_start: int | None = None
        self._last_voiced = -1
        self._unvoiced_run = 0
        self._level_sum = 0.0
        self._level_count = 0

    @property
    def open_segment_start(self) -> int | None:
        """Where the open segment begins (preroll included), None while none is open."""
        return self._segment_start

    def push(self, voiced: bool, mean_square: float) -> list[Action]:
        """Take one frame: whether it is voiced and its mean square (for the level)."""
        t = self.timing
        index = self.frames
        self.frames += 1
        actions: list[Action] = []
        self._recent.append(voiced)
        self._unvoiced_run = 0 if voiced else self._unvoiced_run + 1
        if voiced:
            self._last_voiced = index
        if self._segment_start is None:
            if sum(self._recent) >= t.onset_voiced:
                onset = index - len(self._recent) + 1
                self._segment_start = max(onset - t.preroll_frames, 0)
                actions.append(SegmentOpened(self._segment_start))
                actions.append(self._enter(Phase.SPEECH))
        else:
            if self.phase is Phase.SILENCE and sum(self._recent) >= t.onset_voiced:
                actions.append(self._enter(Phase.SPEECH))
            elif self.phase is Phase.SPEECH and self._unvoiced_run >= t.pause_frames:
                actions.append(self._enter(Phase.SILENCE))
            if self._unvoiced_run >= t.close_frames:
                actions.append(
                    self._close(min(self._last_voiced + 1 + t.postroll_frames, index + 1))
                )
        actions.extend(self._level(mean_square))
        return [a for a in actions if a is not None]

    def finish(self) -> list[Action]:
        """The take was stopped: close the open segment and say `transcribing`."""
        actions: list[Action] = []
        if self._segment_start is not None and self._last_voiced >= self._segment_start:
            end = min(self._last_voiced + 1 + self.timing.postroll_frames, self.frames)
            actions.append(self._close(end))
        self._segment_start = None
        actions.append(PhaseChanged(Phase.TRANSCRIBING))
        self.phase = Phase.TRANSCRIBING
        return actions

    def _enter(self, phase: Phase) -> PhaseChanged:
        self.phase = phase
        return PhaseChanged(phase)

    def _close(self, end: int) -> SegmentClosed:
        assert self._segment_start is not None
        closed = SegmentClosed(self._segment_start, end)
        self._segment_start = None
        self._recent.clear()
        return closed

    def _level(self, mean_square: float) -> list[Action]:
        self._level_sum += mean_square
        self._level_count += 1
        if self._level_count < self.timing.level_frames:
            return []
        rms = (self._level_sum / self._level_count) ** 0.5
        self._level_sum, self._level_count = 0.0, 0
        return [Level(round(rms, 5))]
