"""The keys of `forge attach`: `Ctrl-\\` then `d` detaches, `Ctrl-\\` then `c` takes control back.
Pure: bytes in, bytes to forward out.

`Ctrl-\\` alone forwards nothing yet (the next byte decides, even in a later read); followed by
`d` it detaches and the bytes after it are not sent; followed by `c` it asks for the terminal's
control (a viewer whose control another took has no other way back short of re-attaching), and
typing goes on; followed by anything else both bytes go through unchanged, so the shell still gets
`Ctrl-\\` (SIGQUIT) when the person meant it.
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = 0x1C
"""`Ctrl-\\` (FS)."""
DETACH = ord("d")
TAKE = ord("c")


@dataclass(frozen=True, slots=True)
class Keys:
    """What one read of the keyboard comes to."""

    forward: bytes
    """Bytes for the terminal, in order."""
    detach: bool
    """The detach key was completed; nothing typed after it is forwarded."""
    take: bool = False
    """The take-control key was completed: control is asked for before `forward` is sent."""


class DetachKeys:
    """Feed each keyboard read through `feed`; a prefix may end one read, its key begin the next."""

    def __init__(self) -> None:
        self.armed = False
        """A `Ctrl-\\` was read and is held until the next byte says what it meant."""

    def feed(self, data: bytes) -> Keys:
        if self.armed and data:
            self.armed = False
            data = bytes((PREFIX,)) + data  # read the held prefix as part of this read
        forward = bytearray()
        take = False
        start = 0
        while (found := data.find(PREFIX, start)) >= 0:
            forward += data[start:found]
            if found + 1 == len(data):
                self.armed = True
                return Keys(bytes(forward), False, take)
            following = data[found + 1]
            if following == DETACH:
                return Keys(bytes(forward), True, take)
            if following == TAKE:
                take = True
            else:
                forward += data[found : found + 2]
            start = found + 2
        forward += data[start:]
        return Keys(bytes(forward), False, take)
