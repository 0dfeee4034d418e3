"""How a worker process ended, and the exit code that means "do not restart me"."""

from __future__ import annotations

import signal
from dataclasses import dataclass

CONFIG_ERROR_EXIT = 78
"""A worker exits with this (sysexits' EX_CONFIG) when its configuration cannot work.

The manager never restarts it: the same configuration would fail the same way.
"""


@dataclass(frozen=True, slots=True)
class ExitStatus:
    """Exactly one of `code` (it exited) and `signal` (a signal killed it) is set."""

    code: int | None = None
    signal: int | None = None

    @classmethod
    def from_returncode(cls, returncode: int) -> ExitStatus:
        """From `subprocess.Popen.returncode`, where a negative number is the killing signal."""
        if returncode < 0:
            return cls(signal=-returncode)
        return cls(code=returncode)

    @property
    def is_config_error(self) -> bool:
        return self.code == CONFIG_ERROR_EXIT

    def wire(self) -> int | str:
        """The `last_exit` value of a worker row: the exit code, or the signal's name."""
        if self.signal is not None:
            return signal.Signals(self.signal).name
        assert self.code is not None
        return self.code

    def describe(self) -> str:
        if self.signal is not None:
            return f"killed by {signal.Signals(self.signal).name}"
        return f"exit code {self.code}"
