"""The take's windows as a table: where a voice spoke and how far the audio came in, the reads
out; what each read heard in, the take's words out."""

from __future__ import annotations

from forge.workers.dictate.windows import WINDOW_MS, Heard, Kind, Read, Windows


def read(kind: Kind, start: int, end: int, prompt: tuple[int, ...] = ()) -> Read:
    return Read(kind, start, end, prompt)


def test_no_voice_no_read_and_an_ended_take_with_none_is_done() -> None:
    windows = Windows()
    windows.heard(40_000)
    assert windows.next() is None
    windows.end()
    assert windows.done_reading
    assert windows.text() == ""


def test_each_pause_reads_the_window_again_and_the_end_reuses_the_same_read() -> None:
    windows = Windows()
    windows.opened(300)
    windows.heard(2_000)
    assert windows.next() is None  # a voice speaks, nothing closed yet: the partial's turn
    windows.closed(300, 2_600)
    windows.heard(3_000)
    first = windows.next()
    assert first == read(Kind.AHEAD, 300, 2_600)
    windows.done(first, Heard("Open the editor and..."))
    assert windows.next() is None  # the same audio is not read twice
    windows.opened(4_000)
    windows.closed(4_000, 6_500)
    windows.heard(7_000)
    both = windows.next()
    assert both == read(Kind.AHEAD, 300, 6_500)  # the first half, the pause, the second half
    windows.done(both, Heard("Open the editor and change the font size."))
    windows.end()
    assert windows.next() is None
    assert windows.done_reading
    assert windows.text() == "Open the editor and change the font size."


def test_the_end_reads_what_a_pause_had_not() -> None:
    windows = Windows()
    windows.opened(0)
    windows.closed(0, 2_000)
    windows.done(read(Kind.AHEAD, 0, 2_000), Heard("Run the"))
    windows.opened(2_800)
    windows.closed(2_800, 3_900)  # closed by the take's end, before its pause
    windows.heard(4_000)
    windows.end()
    last = windows.next()
    assert last == read(Kind.FINAL, 0, 4_000)  # to the end of the audio, as the floor reads it
    windows.done(last, Heard("Run the tests."))
    assert windows.done_reading
    assert windows.text() == "Run the tests."


def test_the_final_read_reaches_the_end_of_the_take_but_not_past_a_window() -> None:
    """The attack: the final read stopped at the endpointer's margin, 51 ms short of the clip's
    end, and tiny.en read the noisy voice before it differently ("Then good file" where the whole
    clip has "The input file")."""
    windows = Windows()
    windows.opened(0)
    windows.closed(0, 9_060)
    windows.heard(9_111)
    windows.end()
    assert windows.next() == read(Kind.FINAL, 0, 9_111)
    late = Windows()
    late.opened(1_000)
    late.closed(1_000, 4_000)
    late.heard(45_000)  # stopped long after the last word
    late.end()
    assert late.next() == read(Kind.FINAL, 1_000, 1_000 + WINDOW_MS)


def test_long_speech_commits_30_s_windows_from_where_the_finished_segments_end() -> None:
    windows = Windows()
    windows.opened(1_000)
    windows.heard(30_980)
    assert windows.next() is None
    windows.heard(31_000)
    first = windows.next()
    assert first == read(Kind.COMMIT, 1_000, 1_000 + WINDOW_MS)
    windows.done(first, Heard("One. Two.", (7, 8), finished_ms=24_000))
    assert windows.seek_ms == 25_000
    assert windows.window_ms == 25_000  # the voice still speaks: the cut-off sentence is read again
    windows.heard(40_000)
    assert windows.next() is None
    windows.closed(1_000, 41_000)
    ahead = windows.next()
    assert ahead == read(Kind.AHEAD, 25_000, 41_000, (7, 8))  # prompted with the final words
    windows.done(ahead, Heard("Three, four."))
    assert windows.text() == "One. Two. Three, four."
    assert windows.final() == "One. Two."
    windows.end()
    assert windows.done_reading


def test_an_ended_take_longer_than_a_window_commits_before_its_final_read() -> None:
    windows = Windows()
    windows.opened(0)
    windows.closed(0, 50_000)
    windows.heard(50_000)
    windows.end()
    first = windows.next()
    assert first == read(Kind.COMMIT, 0, WINDOW_MS)
    windows.done(first, Heard("A.", (1,), finished_ms=None))  # finished none: past the window
    last = windows.next()
    assert last == read(Kind.FINAL, WINDOW_MS, 50_000, (1,))
    windows.done(last, Heard("B."))
    assert windows.text() == "A. B."


def test_the_window_starts_where_a_voice_next_spoke_and_audio_before_it_may_go() -> None:
    windows = Windows()
    windows.opened(0)
    windows.closed(0, 3_000)
    windows.heard(30_000)
    first = windows.next()
    assert first == read(Kind.COMMIT, 0, WINDOW_MS)
    windows.done(first, Heard("Hello.", (1,), finished_ms=2_750))
    # the voice's segment ended 250 ms past the finished words: its margin, no voice
    assert windows.window_ms is None
    windows.heard(39_000)
    assert windows.needed_from_ms(preroll_ms=500) == 38_500
    windows.opened(40_000)
    windows.closed(40_000, 42_000)
    windows.heard(43_000)
    assert windows.next() == read(Kind.AHEAD, 40_000, 42_000, (1,))  # not 37 s of silence
