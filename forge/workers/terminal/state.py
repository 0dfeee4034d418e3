"""What the shell is doing, for the strip's words: starting, idle, running, password or exited.

Three sources, best first (O-TM5): OSC 133 marks from a shell with integration
(`shell_integration`), the terminal's foreground process group against the shell's own
(`process`), and the line discipline's ECHO flag with canonical input (`termios`: a program
reading a password; readline at a prompt also turns ECHO off but reads raw). Titles come from
OSC 0/2, cleaned as untrusted text (`forge.untrusted`): a program in the shell chose them, and
a client shows them beside its own words. Pure: `scan` takes output bytes, `observe` a probe the
session took; each returns whether the summary changed, so the host pushes `terminal_changed`
only on real changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from forge.untrusted import one_line

_OSC = re.compile(rb"\x1b\](0|2|133);([^\x07\x1b]*)(?:\x07|\x1b\\)")
_CARRY_LIMIT = 1024
"""An OSC cut by a read boundary is kept this long at most."""
TITLE_LIMIT = 200
"""Characters of a title kept (a strip shows a few dozen)."""


class State(StrEnum):
    STARTING = "starting"
    IDLE = "idle"
    RUNNING = "running"
    PASSWORD = "password"
    EXITED = "exited"


class Source(StrEnum):
    SHELL_INTEGRATION = "shell_integration"
    PROCESS = "process"
    TERMIOS = "termios"


@dataclass(frozen=True, slots=True)
class Probe:
    """One look at the PTY: who holds the foreground, and how the line discipline is set."""

    foreground_pgid: int | None
    shell_pgid: int
    echo: bool
    canonical: bool


class StateDetector:
    """Folds output and probes into (state, source, title, exit status)."""

    def __init__(self) -> None:
        self.state = State.STARTING
        self.source = Source.PROCESS
        self.title = ""
        self.exit_status: int | None = None
        self._started = False
        self._integration: str | None = None
        """The last OSC 133 mark (A, B, C or D), None until the shell sends one."""
        self._probe: Probe | None = None
        self._carry = b""

    def scan(self, data: bytes) -> bool:
        """Output from the shell; True if the summary changed (a new title included)."""
        before = self.summary()
        self._started = True
        if self._carry:
            data = self._carry + data
            self._carry = b""
        # One-byte search is memchr; a two-byte `in` scans ~50x slower on a flood.
        if data.find(b"\x1b") != -1:
            end = 0
            for match in _OSC.finditer(data):
                end = match.end()
                code, text = match.group(1), match.group(2)
                if code == b"133":
                    self._integration = text[:1].decode("ascii", "replace") or None
                else:
                    self.title = one_line(text.decode("utf-8", "replace"), TITLE_LIMIT)
            start = data.rfind(b"\x1b", end)
            cut_short = data[start + 1 : start + 2] in (b"]", b"")
            if start != -1 and cut_short and len(data) - start <= _CARRY_LIMIT:
                self._carry = bytes(data[start:])
        return self._derive() or self.summary() != before

    def observe(self, probe: Probe) -> bool:
        """A fresh probe of the PTY; True if the summary changed."""
        self._probe = probe
        return self._derive()

    def exited(self, status: int) -> bool:
        """The shell is gone with `status` (128 + signal number when a signal ended it)."""
        self.exit_status = status
        return self._derive()

    def summary(self) -> tuple[State, Source, str, int | None]:
        return (self.state, self.source, self.title, self.exit_status)

    def _derive(self) -> bool:
        before = self.summary()
        self.state, self.source = self._classify()
        return self.summary() != before

    def _classify(self) -> tuple[State, Source]:
        probe = self._probe
        if self.exit_status is not None:
            return State.EXITED, Source.PROCESS
        if probe is not None and not probe.echo and probe.canonical:
            return State.PASSWORD, Source.TERMIOS
        if self._integration is not None:
            running = self._integration == "C"
            return (State.RUNNING if running else State.IDLE), Source.SHELL_INTEGRATION
        if probe is not None and probe.foreground_pgid not in (None, probe.shell_pgid):
            return State.RUNNING, Source.PROCESS
        if not self._started:
            return State.STARTING, Source.PROCESS
        return State.IDLE, Source.PROCESS
