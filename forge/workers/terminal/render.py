"""Render a screen model back to a VT stream: the `screen` of a `terminal_view` frame (O-TM1).

A viewer that attaches mid-stream draws this string, then the raw chunks after its `seq`; so the
string must leave a real terminal (and a fresh pyte screen) in the same state the host's model is
in: cells with their colours and attributes, the cursor and its pen, the scroll region, tab stops,
the title and the modes a program switched (alternate screen, cursor visibility, cursor keys,
bracketed paste, mouse reporting). Pure: tested by feeding the output into a fresh screen.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pyte.modes as mo
from pyte import graphics
from pyte.screens import Char
from wcwidth import wcwidth

from forge.workers.terminal.screen import ALTERNATE_SCREEN_MODES, SAVES_CURSOR, TerminalScreen

CSI = "\x1b["

_FG_CODES = {name: code for code, name in {**graphics.FG_ANSI, **graphics.FG_AIXTERM}.items()}
_BG_CODES = {name: code for code, name in {**graphics.BG_ANSI, **graphics.BG_AIXTERM}.items()}
_PALETTE_INDEX: dict[str, int] = {}
for _index, _hex in enumerate(graphics.FG_BG_256):
    _PALETTE_INDEX.setdefault(_hex, _index)

_FLAGS = (("bold", 1), ("italics", 3), ("underscore", 4), ("blink", 5), ("strikethrough", 9))

_DEFAULT_MODES = frozenset({mo.DECAWM, mo.DECTCEM})
_DRAWN_APART = frozenset({mo.DECCOLM, mo.DECOM, mo.DECSCNM, *ALTERNATE_SCREEN_MODES})
"""Modes emitted at their own place in the stream (or, for DECCOLM, carried by cols/rows)."""


def render_screen(screen: TerminalScreen) -> str:
    """The VT stream that repaints `screen` from any state: reset, clear, rows, modes, cursor."""
    return "".join(_render(screen))


def _render(screen: TerminalScreen) -> Iterator[str]:
    yield "\x1bc" + CSI + "H" + CSI + "2J"
    screen_reverse = mo.DECSCNM in screen.mode
    if screen_reverse:
        yield CSI + "?5h"
    if screen.title:
        yield f"\x1b]2;{screen.title}\x07"
    if screen.main_buffer is not None:
        yield from _rows(screen, screen.main_buffer, screen_reverse)
        if screen.main_cursor is not None:
            cursor = screen.main_cursor
            yield from _cursor(screen, screen.main_buffer, cursor.y, cursor.x, 0, screen_reverse)
            yield _sgr(cursor.attrs, screen_reverse)
        # The mode that entered first decides whether the cursor was saved with the shell's screen.
        saved = screen.main_cursor is not None
        active = screen.mode & ALTERNATE_SCREEN_MODES
        for mode in sorted(active, key=lambda mode: (mode == SAVES_CURSOR) != saved):
            yield f"{CSI}?{mode >> 5}h"
    yield from _rows(screen, screen.buffer, screen_reverse)
    stops = {stop for stop in screen.tabstops if stop < screen.columns}
    if stops != set(range(8, screen.columns, 8)):
        yield CSI + "3g"
        for stop in sorted(stops):
            yield f"{CSI}1;{stop + 1}H\x1bH"
    if screen.margins is not None:
        yield f"{CSI}{screen.margins.top + 1};{screen.margins.bottom + 1}r"
    yield from _modes(screen.mode)
    top = 0
    if mo.DECOM in screen.mode:
        yield CSI + "?6h"
        top = screen.margins.top if screen.margins is not None else 0
    cursor = screen.cursor
    yield from _cursor(screen, screen.buffer, cursor.y, cursor.x, top, screen_reverse)
    yield _sgr(cursor.attrs, screen_reverse)
    if mo.DECTCEM not in screen.mode:
        yield CSI + "?25l"


def _modes(modes: set[int]) -> Iterator[str]:
    for mode in sorted(_DEFAULT_MODES - modes):
        yield f"{CSI}?{mode >> 5}l"
    for mode in sorted(modes - _DEFAULT_MODES - _DRAWN_APART):
        private = mode >= 32 and mode % 32 == 0
        yield f"{CSI}?{mode >> 5}h" if private else f"{CSI}{mode}h"


def _rows(
    screen: TerminalScreen, buffer: Mapping[int, Mapping[int, Char]], screen_reverse: bool
) -> Iterator[str]:
    blank = screen.default_char
    pen: Char | None = None
    for y in range(screen.lines):
        line = buffer.get(y)
        if not line:
            continue
        drawn = [x for x in line if x < screen.columns and line[x] != blank]
        if not drawn:
            continue
        yield f"{CSI}{y + 1}H"
        column = 0
        for x in range(max(drawn) + 1):
            cell = line[x]
            if _is_stub(cell) and x > 0 and _is_wide(line[x - 1]):
                continue
            if column != x:
                yield f"{CSI}{y + 1};{x + 1}H"
            if pen is None or cell._replace(data="") != pen:
                pen = cell._replace(data="")
                yield _sgr(pen, screen_reverse)
            yield " " if _is_stub(cell) else cell.data
            column = x + (2 if _is_wide(cell) else 1)


def _cursor(
    screen: TerminalScreen,
    buffer: Mapping[int, Mapping[int, Char]],
    y: int,
    x: int,
    top: int,
    screen_reverse: bool,
) -> Iterator[str]:
    """Place the cursor; one past the last column (pending wrap) is reached by redrawing a cell."""
    if x < screen.columns:
        yield f"{CSI}{y - top + 1};{x + 1}H"
        return
    line = buffer.get(y, {})
    blank = screen.default_char
    last = screen.columns - 1
    if last > 0 and _is_stub(line.get(last, blank)) and _is_wide(line.get(last - 1, blank)):
        last -= 1
    cell = line.get(last, blank)
    yield f"{CSI}{y - top + 1};{last + 1}H"
    yield _sgr(cell, screen_reverse)
    yield " " if _is_stub(cell) else cell.data


def _is_stub(cell: Char) -> bool:
    """The right half of a wide character: empty, or only the marks pyte combined into it."""
    return not cell.data or wcwidth(cell.data[0]) == 0


def _is_wide(cell: Char) -> bool:
    return bool(cell.data) and wcwidth(cell.data[0]) == 2


def _sgr(pen: Char, screen_reverse: bool) -> str:
    codes = ["0"]
    codes.extend(str(code) for name, code in _FLAGS if getattr(pen, name))
    if pen.reverse != screen_reverse:
        codes.append("7" if pen.reverse else "27")
    codes.extend(_colour(pen.fg, _FG_CODES, "38"))
    codes.extend(_colour(pen.bg, _BG_CODES, "48"))
    return f"{CSI}{';'.join(codes)}m"


def _colour(colour: str, named: Mapping[str, int], extended: str) -> list[str]:
    if colour == "default":
        return []
    if colour in named:
        return [str(named[colour])]
    if colour in _PALETTE_INDEX:
        return [extended, "5", str(_PALETTE_INDEX[colour])]
    red, green, blue = (int(colour[i : i + 2], 16) for i in (0, 2, 4))
    return [extended, "2", str(red), str(green), str(blue)]
