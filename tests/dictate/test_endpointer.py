"""The endpointer as a table: voiced flags in, phases, levels and segments out."""

from __future__ import annotations

from forge.workers.dictate.endpointer import (
    Endpointer,
    Level,
    Phase,
    PhaseChanged,
    SegmentClosed,
    SegmentOpened,
    Timing,
)

T = Timing()


def run(pattern: str, *, finish: bool = False, timing: Timing = T) -> tuple[Endpointer, list]:
    """Push one frame per character: `v` voiced, `.` unvoiced (loudness 0.01 / 0)."""
    endpointer = Endpointer(timing)
    actions = []
    for mark in pattern:
        actions += endpointer.push(mark == "v", 0.01 if mark == "v" else 0.0)
    if finish:
        actions += endpointer.finish()
    return endpointer, actions


def phases(actions: list) -> list[Phase]:
    return [a.phase for a in actions if isinstance(a, PhaseChanged)]


def segments(actions: list) -> list[tuple[int, int]]:
    return [(a.start, a.end) for a in actions if isinstance(a, SegmentClosed)]


def test_silence_is_listening_and_closes_nothing() -> None:
    _endpointer, actions = run("." * 200, finish=True)
    assert phases(actions) == [Phase.TRANSCRIBING]
    assert segments(actions) == []


def test_a_few_voiced_frames_are_not_speech() -> None:
    _, actions = run("." * 20 + "vvv" + "." * 50)
    assert phases(actions) == []


def test_speech_then_a_long_pause_closes_one_segment_with_its_margins() -> None:
    _, actions = run("." * 40 + "v" * 100 + "." * 40)
    assert phases(actions) == [Phase.SPEECH, Phase.SILENCE]
    onset = 40 + T.onset_voiced - 1  # the frame the onset is seen on, minus the window
    start = onset - (T.onset_window - 1) - T.preroll_frames
    assert segments(actions) == [(start, 140 + T.postroll_frames)]


def test_a_short_pause_keeps_the_segment_open() -> None:
    _, actions = run("v" * 50 + "." * 20 + "v" * 50 + "." * 40)
    assert phases(actions) == [Phase.SPEECH, Phase.SILENCE, Phase.SPEECH, Phase.SILENCE]
    assert segments(actions) == [(0, 120 + T.postroll_frames)]


def test_two_sentences_apart_are_two_segments() -> None:
    _, actions = run("v" * 50 + "." * 40 + "v" * 50 + "." * 40)
    assert len(segments(actions)) == 2


def test_finish_closes_the_open_segment_at_the_last_voice() -> None:
    _, actions = run("v" * 60 + "..", finish=True)
    assert segments(actions) == [(0, 62)]
    assert phases(actions)[-1] == Phase.TRANSCRIBING


def test_long_speech_is_one_segment_from_its_opening() -> None:
    """Speech that never pauses was cut every 20 s, mid-word, and the word there was lost: now
    it is one segment, opened where the voice began (windows.py reads it 30 s at a time)."""
    _, actions = run("." * 40 + "v" * 2000, finish=True)
    start = 40 + T.onset_voiced - 1 - (T.onset_window - 1) - T.preroll_frames
    assert [a.start for a in actions if isinstance(a, SegmentOpened)] == [start]
    assert segments(actions) == [(start, 2040)]


def test_a_level_every_five_frames_as_an_rms() -> None:
    _, actions = run("v" * 23)
    levels = [a for a in actions if isinstance(a, Level)]
    assert len(levels) == 4
    assert all(abs(level.rms - 0.1) < 1e-9 for level in levels)
