"""`voice__say`'s line and answer, pure: the model's text is cleaned and cut before anyone hears
it, and the model is told who heard it."""

from __future__ import annotations

from forge.workers.agent.protocol import SAY_MAX_CHARS
from forge.workers.agent.voice import Line, Room, answer, spoken_line


def test_control_characters_and_escapes_are_gone_and_shell_text_stays_words() -> None:
    line = spoken_line("Deploy \x00\x07\x1b[31mred\x1b]0;title\x07 $(rm -rf ~) `id`;\nnext\ud800")
    assert line == Line(text="Deploy red $(rm -rf ~) `id`; next", cut=False)


def test_a_megabyte_is_cut_to_the_most_that_is_spoken() -> None:
    line = spoken_line("word " * 210_000)
    assert len(line.text) == SAY_MAX_CHARS
    assert line.cut
    assert line.text.endswith("…")
    assert not spoken_line("x" * SAY_MAX_CHARS).cut


def test_the_answer_says_who_heard_or_why_nobody_did() -> None:
    said = Line(text="The build is green.", cut=False)
    assert answer(Room(listeners=1, speech=True), said) == ("spoken to 1 listener", True)
    assert answer(Room(listeners=2, speech=True), said) == ("spoken to 2 listeners", True)
    assert answer(Room(listeners=0, speech=True), said) == (
        "no one is listening: nothing was spoken",
        False,
    )
    assert answer(Room(listeners=3, speech=False), said)[1] is False
    assert answer(Room(listeners=1, speech=True), Line(text="", cut=False))[1] is False
    cut, spoken = answer(Room(listeners=1, speech=True), Line(text="x…", cut=True))
    assert spoken
    assert f"first {SAY_MAX_CHARS} characters" in cut
