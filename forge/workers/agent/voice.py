"""What forge's `voice__say` tool does with the model's line, free of I/O: the line cleaned and
cut, and the answer the model reads.

The line is text an agent wrote, so it is data: one line (`forge.untrusted.one_line`: terminal
escapes, control and format characters gone), lone surrogates dropped, at most
`SAY_MAX_CHARS`; the speech engine reads it on stdin (docs/security.md, "Speech text is
data"). The answer says how many heard it, or why nobody did, so the model can stop
speaking to an empty room; playback is never awaited.
"""

from __future__ import annotations

from dataclasses import dataclass

from forge.untrusted import one_line
from forge.workers.agent.protocol import SAY_MAX_CHARS

TOOL_NAME = "voice__say"
"""The tool's name in forge's in-process MCP server `forge`: the model calls it as
`mcp__forge__voice__say`."""
SERVER_NAME = "forge"
QUALIFIED_NAME = f"mcp__{SERVER_NAME}__{TOOL_NAME}"
DESCRIPTION = (
    "Speak a short line aloud to the person through forge, on the phones and desktops that have "
    "this seat's voice switched on. Use it for the substance of an update in a live-conversation "
    f"register, one or two sentences; at most {SAY_MAX_CHARS} characters are spoken. Returns how "
    "many listeners heard it, or that no one is listening."
)


@dataclass(frozen=True, slots=True)
class Line:
    """A line as it will be spoken, and whether the model's text was cut to fit."""

    text: str
    cut: bool


READ_MAX_CHARS = 16 * SAY_MAX_CHARS
"""How much of the model's text is read at all: cleaning a megabyte would hold the worker's
loop, and what cleaning removes (escapes, control characters) is rarely more than this."""


def spoken_line(text: str) -> Line:
    """`text` as one clean line of at most `SAY_MAX_CHARS` characters (an ellipsis marks a cut)."""
    read = text[:READ_MAX_CHARS].encode("utf-8", "surrogatepass").decode("utf-8", "ignore")
    line = one_line(read, SAY_MAX_CHARS)
    cut = len(text) > READ_MAX_CHARS or (len(line) == SAY_MAX_CHARS and line.endswith("…"))
    return Line(text=line, cut=cut)


@dataclass(frozen=True, slots=True)
class Room:
    """Who hears the seat, as the supervisor last said (`Listeners`)."""

    listeners: int = 0
    speech: bool = False


def answer(room: Room, line: Line) -> tuple[str, bool]:
    """What the tool tells the model, and whether the line is spoken (sent to the supervisor)."""
    if not line.text:
        return "there is nothing to say: the text is empty without its control characters", False
    if not room.speech:
        return "speech is off on this server ([tts] enabled = false): nothing was spoken", False
    if room.listeners == 0:
        return "no one is listening: nothing was spoken", False
    heard = f"spoken to {room.listeners} listener{'' if room.listeners == 1 else 's'}"
    if line.cut:
        heard += f" (only the first {SAY_MAX_CHARS} characters; keep spoken updates short)"
    return heard, True
