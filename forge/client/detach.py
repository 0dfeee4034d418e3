"""The detach key of `forge attach`: `Ctrl-\\` then `d`. Pure: bytes in, bytes to forward out.

`Ctrl-\\` alone forwards nothing yet (the next byte decides, even in a later read); followed by
`d` it detaches and the bytes after it are not sent; followed by anything else both bytes go
through unchanged, so the shell still gets `Ctrl-\\` (SIGQUIT) when the person meant it.
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = 0x1C
"""`Ctrl-\\` (FS)."""
DETACH = ord("d")


@dataclass(frozen=True, slots=True)
class Keys:
    """What one read of the keyboard comes to."""

    forward: bytes
    """Bytes for the terminal, in order."""
    detach: bool
    """The detach key was completed; nothing typed after it is forwarded."""


class DetachKeys:
    """Feed every keyboard read through `feed`; a prefix may end one read, `d` start the next."""

    def __init__(self) -> None:
        self.armed = False
        """A `Ctrl-\\` was read and is held until the next byte says what it meant."""

    def feed(self, data: bytes) -> Keys:
        forward = bytearray()
        start = 0
        if self.armed and data:
            self.armed = False
            if data[0] == DETACH:
                return Keys(b"", True)
            forward += bytes((PREFIX, data[0]))
            start = 1
        while True:
            found = data.find(PREFIX, start)
            if found < 0:
                forward += data[start:]
                return Keys(bytes(forward), False)
            forward += data[start:found]
            if found + 1 == len(data):
                self.armed = True
                return Keys(bytes(forward), False)
            following = data[found + 1]
            if following == DETACH:
                return Keys(bytes(forward), True)
            forward += data[found : found + 2]
            start = found + 2
