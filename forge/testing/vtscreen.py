"""A pyte `Screen` that also keeps xterm's alternate screen buffer, for tests that read a view.

Tests draw what a client was sent (a `terminal_view`'s screen, then its chunks) to assert on the
text; pyte is quick to run in the test's own process. pyte records `CSI ? 1049 h` as a mode bit
but draws the full-screen program over the shell's screen; this subclass swaps buffers the way
xterm does. The host's own model is xterm.js (`forge.workers.terminal.model`), and what a view
draws is checked cell by cell against xterm.js in tests/screen.
"""

from __future__ import annotations

import copy
from collections import defaultdict

import pyte
import pyte.modes as mo
from pyte.screens import Char, Cursor, StaticDefaultDict

ALTERNATE_SCREEN_MODES = frozenset({47 << 5, 1047 << 5, 1049 << 5})
"""Private modes that switch to the alternate buffer (pyte shifts private modes left by 5)."""

SAVES_CURSOR = 1049 << 5
"""The one alternate-screen mode that also saves and restores the cursor, as DECSC/DECRC do."""

Buffer = dict[int, StaticDefaultDict[int, Char]]


class TerminalScreen(pyte.Screen):
    """A pyte screen with xterm's main/alternate buffer pair; `main_buffer` is set while in alt."""

    def __init__(self, columns: int, lines: int) -> None:
        self.main_buffer: Buffer | None = None
        self.main_cursor: Cursor | None = None
        super().__init__(columns, lines)

    @property
    def in_alternate(self) -> bool:
        return self.main_buffer is not None

    def _fresh_buffer(self) -> Buffer:
        return defaultdict(lambda: StaticDefaultDict[int, Char](self.default_char))

    def reset(self) -> None:
        self.main_buffer = None
        self.main_cursor = None
        super().reset()

    def set_mode(self, *modes: int, **kwargs: bool) -> None:
        private = bool(kwargs.get("private"))
        shifted = {m << 5 for m in modes} if private else set()
        entering = shifted & ALTERNATE_SCREEN_MODES
        if entering and self.main_buffer is None:
            self.main_buffer = self.buffer
            self.main_cursor = copy.copy(self.cursor) if SAVES_CURSOR in entering else None
            self.buffer = self._fresh_buffer()
            self.dirty.update(range(self.lines))
        super().set_mode(*modes, **kwargs)
        if mo.DECSCNM in shifted:
            self._reverse_main_buffer(True)

    def reset_mode(self, *modes: int, **kwargs: bool) -> None:
        private = bool(kwargs.get("private"))
        shifted = {m << 5 for m in modes} if private else set()
        super().reset_mode(*modes, **kwargs)
        if mo.DECSCNM in shifted:
            self._reverse_main_buffer(False)
        if shifted & ALTERNATE_SCREEN_MODES and self.main_buffer is not None:
            self.mode.difference_update(ALTERNATE_SCREEN_MODES)
            self.buffer = self.main_buffer
            self.main_buffer = None
            if self.main_cursor is not None:
                self.cursor = self.main_cursor
                self.main_cursor = None
                self.ensure_hbounds()
                self.ensure_vbounds()
            self.dirty.update(range(self.lines))

    def _reverse_main_buffer(self, reverse: bool) -> None:
        """DECSCNM reverses the whole display, so the buffer under the alternate screen too."""
        for line in (self.main_buffer or {}).values():
            line.default = self.default_char
            for x in line:
                line[x] = line[x]._replace(reverse=reverse)

    def resize(self, lines: int | None = None, columns: int | None = None) -> None:
        """Resize both buffers, so leaving the alternate screen after a resize fits the size."""
        main = self.main_buffer
        if main is not None:
            new_lines, new_columns = lines or self.lines, columns or self.columns
            dropped = max(0, self.lines - new_lines)
            resized = self._fresh_buffer()
            for y, line in main.items():
                if dropped <= y < dropped + new_lines:
                    for x in [x for x in line if x >= new_columns]:
                        del line[x]
                    resized[y - dropped] = line
            self.main_buffer = resized
            if self.main_cursor is not None:
                cursor = self.main_cursor
                cursor.y = min(max(0, cursor.y - dropped), new_lines - 1)
                cursor.x = min(cursor.x, new_columns - 1)
        super().resize(lines, columns)
