"""The rendered screen, fed to a fresh pyte screen, reproduces the model cell by cell."""

from __future__ import annotations

from typing import Any

import pyte
from hypothesis import given, settings
from hypothesis import strategies as st
from pyte.screens import Char
from wcwidth import wcwidth

from forge.workers.terminal.render import render_screen
from forge.workers.terminal.screen import TerminalScreen

COLS, ROWS = 20, 6


def screen_from(vt: str, cols: int = COLS, rows: int = ROWS) -> TerminalScreen:
    screen = TerminalScreen(cols, rows)
    pyte.Stream(screen).feed(vt)
    return screen


def cells(screen: TerminalScreen, buffer: Any) -> list[list[Char]]:
    """Every cell; a stub no wide character owns draws as the blank a terminal shows there."""
    rows = []
    for y in range(screen.lines):
        line = buffer[y]
        row = []
        for x in range(screen.columns):
            cell = line[x]
            if not cell.data or wcwidth(cell.data[0]) == 0:
                owned = x > 0 and line[x - 1].data and wcwidth(line[x - 1].data[0]) == 2
                cell = cell._replace(data="" if owned else " ")
            row.append(cell)
        rows.append(row)
    return rows


def state(screen: TerminalScreen) -> dict[str, Any]:
    main = None
    if screen.main_buffer is not None:
        saved = screen.main_cursor
        main = (
            cells(screen, screen.main_buffer),
            None if saved is None else (saved.x, saved.y, saved.attrs),
        )
    return {
        "cells": cells(screen, screen.buffer),
        "cursor": (screen.cursor.x, screen.cursor.y, screen.cursor.attrs),
        "hidden": screen.cursor.hidden,
        "mode": screen.mode,
        "margins": screen.margins,
        "tabstops": {stop for stop in screen.tabstops if stop < screen.columns},
        "title": screen.title,
        "main": main,
    }


def assert_round_trip(source: TerminalScreen) -> None:
    copy = screen_from(render_screen(source), source.columns, source.lines)
    assert state(copy) == state(source)


def test_plain_text_and_cursor() -> None:
    assert_round_trip(screen_from("hello\r\nworld$ "))


def test_colours_named_256_and_true_colour() -> None:
    source = screen_from(
        "\x1b[1;31mred\x1b[0m \x1b[38;5;196;48;5;21mcube\x1b[38;2;1;2;3mtrue\x1b[97;105mbright"
        "\x1b[3;4;5;7;9mflags\x1b[22;23mpen"
    )
    assert source.buffer[0][4].fg == "ff0000"
    assert_round_trip(source)


def test_modes_survive() -> None:
    source = screen_from("x\x1b[?1h\x1b[?2004h\x1b[?1000h\x1b[?1006h\x1b[?25l\x1b[4h\x1b[?7l")
    assert_round_trip(source)
    rendered = render_screen(source)
    for switch in ("\x1b[?1h", "\x1b[?2004h", "\x1b[?1000h", "\x1b[?1006h", "\x1b[?25l"):
        assert switch in rendered


def test_alternate_screen_keeps_the_shell_screen_underneath() -> None:
    source = screen_from("$ less file\r\n\x1b[?1049h\x1b[2J\x1b[Hpage one")
    assert source.display[0].startswith("page one")
    copy = screen_from(render_screen(source))
    assert state(copy) == state(source)
    pyte.Stream(copy).feed("\x1b[?1049l")
    assert copy.display[0].startswith("$ less file")
    assert (copy.cursor.x, copy.cursor.y) == (0, 1)


def test_leaving_the_alternate_screen_restores_the_shell() -> None:
    screen = screen_from("$ vi\r\n\x1b[?1049h\x1b[Hvi text\x1b[?1049l")
    assert screen.display[0].startswith("$ vi")
    assert "vi text" not in "".join(screen.display)


def test_scroll_region_and_origin_mode() -> None:
    assert_round_trip(screen_from("a\r\nb\r\n\x1b[2;5r\x1b[?6h\x1b[2;3Hin"))


def test_pending_wrap_at_the_last_column() -> None:
    source = screen_from("x" * COLS)
    assert source.cursor.x == COLS
    copy = screen_from(render_screen(source) + "y")
    pyte.Stream(source).feed("y")
    assert state(copy) == state(source)


def test_wide_characters() -> None:
    assert_round_trip(screen_from("界界\x1b[1;2Ha\x1b[2;19H界"))


def test_resize_while_in_alternate_screen_keeps_the_shell_screen() -> None:
    screen = screen_from("1\r\n2\r\n3\r\n4\r\n5\r\n6\x1b[?1049hvi")
    screen.resize(4, 10)
    pyte.Stream(screen).feed("\x1b[?1049l")
    assert screen.display == ["3         ", "4         ", "5         ", "6         "]


PRIVATE_MODES = [1, 5, 6, 7, 25, 47, 1000, 1002, 1003, 1004, 1006, 1047, 1049, 2004]
SGR_CODES = [0, 1, 3, 4, 5, 7, 9, 22, 23, 24, 25, 27, 29, *range(30, 38), 39, *range(40, 48), 49]
SGR_CODES += [*range(90, 98), *range(100, 108)]
byte = st.integers(0, 255)
sgr = st.one_of(
    st.lists(st.sampled_from(SGR_CODES), min_size=1, max_size=4).map(
        lambda codes: ";".join(map(str, codes))
    ),
    st.tuples(st.sampled_from(["38", "48"]), byte).map(lambda c: f"{c[0]};5;{c[1]}"),
    st.tuples(st.sampled_from(["38", "48"]), byte, byte, byte).map(
        lambda c: f"{c[0]};2;{c[1]};{c[2]};{c[3]}"
    ),
).map(lambda params: f"\x1b[{params}m")
operations = st.one_of(
    st.text(alphabet="ab Z界é─\u0301", min_size=1, max_size=25),
    sgr,
    st.tuples(st.integers(1, ROWS), st.integers(1, COLS)).map(lambda p: f"\x1b[{p[0]};{p[1]}H"),
    st.sampled_from(["\r\n", "\n", "\t", "\x1bH", "\x1b[3g", "\x1b[g", "\x1b[2J", "\x1b[K"]),
    st.sampled_from(["\x1b[1K", "\x1b[J", "\x1bM", "\x1b7", "\x1b8", "\x1b[2L", "\x1b[P"]),
    st.tuples(st.sampled_from(PRIVATE_MODES), st.sampled_from("hl")).map(
        lambda m: f"\x1b[?{m[0]}{m[1]}"
    ),
    st.tuples(st.sampled_from([4, 20]), st.sampled_from("hl")).map(lambda m: f"\x1b[{m[0]}{m[1]}"),
    st.tuples(st.integers(1, ROWS), st.integers(1, ROWS)).map(lambda m: f"\x1b[{m[0]};{m[1]}r"),
    st.text(alphabet="tile ", min_size=1, max_size=8).map(lambda t: f"\x1b]2;{t}\x07"),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(operations, max_size=40))
def test_any_screen_round_trips(ops: list[str]) -> None:
    assert_round_trip(screen_from("".join(ops)))
