"""Mode switches found in bytes the screen model skipped, so a skip never loses a mode.

When the model falls behind, the feeder drops the backlog's head and feeds only its tail; the
final screen's cells come from the tail, but a mode switched in the dropped part (vi entering the
alternate screen, a shell turning on bracketed paste, a mouse mode, a scroll region) would be
lost. `ModeTracker` scans dropped bytes with one regular expression (C speed) and `replay`
gives the net effect as VT bytes, fed to the model before the tail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SWITCH = re.compile(rb"\x1bc|\x1b\[(\?)?([0-9;]*)([hlr])|\x1b\][02];([^\x07\x1b]*)(?:\x07|\x1b\\)")
"""RIS; CSI [?] params h/l/r: set mode, reset mode, DECSTBM (scroll region); OSC 0/2: the title."""

_CARRY_LIMIT = 256
"""A sequence cut by a chunk boundary is kept this long at most; a longer tail is not a switch."""


@dataclass
class ModeTracker:
    """Net mode changes of the bytes fed to `scan` since the last `apply`."""

    reset: bool = False
    """A full reset (ESC c) was seen: the screen restarts from power-on state first."""
    modes: dict[tuple[int, bool], bool] = field(default_factory=dict)
    """(mode number, private) -> set (True) or reset (False), the last switch of each mode."""
    margins: tuple[int, int] | None = None
    """The last scroll region set, as its 1-based (top, bottom) parameters; (0, 0) clears it."""
    title: str | None = None
    """The last title set, if any."""
    _carry: bytes = b""

    def scan(self, data: bytes) -> None:
        """Record the switches in `data`; a sequence split across calls is joined up."""
        if self._carry:
            data = self._carry + data
            self._carry = b""
        # Skipped flood bytes rarely hold an escape: one memchr beats the regex's scan ~10x.
        if data.find(b"\x1b") == -1:
            return
        end = 0
        for match in _SWITCH.finditer(data):
            end = match.end()
            if match.group(0) == b"\x1bc":
                self.reset, self.modes, self.margins = True, {}, None
                continue
            if match.group(4) is not None:
                self.title = match.group(4).decode("utf-8", "replace")
                continue
            private, params, final = match.group(1) is not None, match.group(2), match.group(3)
            numbers = [int(p) for p in params.split(b";") if p]
            if final == b"r":
                if not private:
                    top, bottom = [*numbers, 0, 0][:2]
                    self.margins = (top, bottom)
                continue
            for number in numbers:
                self.modes[(number, private)] = final == b"h"
        escape = data.rfind(b"\x1b", end)
        if escape != -1 and len(data) - escape <= _CARRY_LIMIT:
            self._carry = bytes(data[escape:])

    def replay(self) -> bytes:
        """The net changes as VT bytes (a reset first, the title last), then forget them."""
        out = [b"\x1bc"] if self.reset else []
        for (number, private), on in self.modes.items():
            out.append(b"\x1b[%s%d%s" % (b"?" if private else b"", number, b"h" if on else b"l"))
        if self.margins is not None:
            top, bottom = self.margins
            out.append(b"\x1b[%d;%dr" % (top, bottom))  # 0 is the default: the screen's edge
        if self.title is not None:
            out.append(b"\x1b]2;" + self.title.encode() + b"\x07")
        self.reset, self.modes, self.margins, self.title, self._carry = False, {}, None, None, b""
        return b"".join(out)
