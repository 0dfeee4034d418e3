"""The [dictate] axes shape words as a pure function; unknown names lose nothing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forge.workers.dictate.shaping import Axes, shape
from forge.workers.dictate.wer import words

HEARD = " um so please open the terminal.  and run the tests. it's done "


@pytest.mark.parametrize(
    ("axes", "shaped"),
    [
        (Axes(), "So please open the terminal. And run the tests. It's done."),
        (Axes("verbatim"), "um so please open the terminal. and run the tests. it's done"),
        (Axes("casual", "lines"), "so please open the terminal\nand run the tests\nit's done"),
        (
            Axes("formal", "list"),
            "- So please open the terminal\n- And run the tests\n- It is done",
        ),
        (Axes(styling="fancy", structure="poem", context="moon"), HEARD.strip().replace("  ", " ")),
    ],
)
def test_each_axis(axes: Axes, shaped: str) -> None:
    assert shape(HEARD, axes) == shaped


@pytest.mark.parametrize(
    ("heard", "shaped"),
    [
        ("git commit dash dash amend.", "git commit --amend"),
        ("Um, list the files dot txt.", "list the files.txt"),
        ("cd tilde slash notes", "cd ~/notes"),
    ],
)
def test_the_terminal_context_writes_symbols_for_a_shell(heard: str, shaped: str) -> None:
    assert shape(heard, Axes(context="terminal")) == shaped


@pytest.mark.parametrize("styling", ["casual", "semi_formal", "formal"])
def test_an_ellipsis_whisper_wrote_is_not_the_speakers(styling: str) -> None:
    heard = "Open the settings in the editor and... change the font\u2026 to a larger size..."
    shaped = shape(heard, Axes(styling))
    assert "..." not in shaped
    assert "\u2026" not in shaped
    assert words(shaped) == words(heard)
    assert shape(heard, Axes("verbatim")) == heard


def test_nothing_heard_is_nothing_shaped() -> None:
    assert shape("", Axes()) == ""
    assert shape("  um.  ", Axes()) == ""


@given(st.text(alphabet="abcdefgh .,!?'\n", max_size=80))
def test_verbatim_prose_keeps_every_word(text: str) -> None:
    assert words(shape(text, Axes("verbatim", "prose", "general"))) == words(text)


@given(st.lists(st.sampled_from(["open", "the", "file", "now", "please", "save"]), max_size=12))
def test_semi_formal_keeps_every_word_but_fillers(said: list[str]) -> None:
    text = " ".join(said)
    assert words(shape(text, Axes())) == words(text)
