"""Answers to verbs and commands of the protocol that this server does not serve yet (O-S11,
O-G4, O-S10).

Each answer is chosen so a client cannot loop on it: `more` gets an empty page with a null
cursor (an error would mean "ask again"), and `client_perf` nothing at all. `more` answers only
for a started seat (`seat_of`): for a seat that is not there the refusal by name stands (S04),
because an empty page would tell a client the seat's history ended. A known command that
nothing serves is refused by name (`unserved_command`), never as unknown. (Dictation
and voice, settings edits, documents and file contents are served by their areas.)
"""

from __future__ import annotations

from forge.wire import server
from forge.wire.client import (
    ClientMessage,
    ClientPerf,
    More,
)
from forge.wire.commands import CommandCall
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat

UNSERVED = (More, ClientPerf)


def seat_of(message: ClientMessage) -> Seat | None:
    """The seat `message` answers for, which must have been started before it is answered."""
    match message:
        case More():
            return message.conversation
        case _:
            return None


def unserved_command(call: CommandCall) -> ClientRefusal:
    """A known command that no area serves yet (O-S10): refused by its name."""
    return ClientRefusal("command", f"{call.name} is not supported by this server")


def answer_unserved(message: ClientMessage) -> server.ServerMessage | None:
    """The frame that answers `message` (None for no answer), or a refusal naming the verb."""
    match message:
        case More():
            return server.Page(conversation=message.conversation)
        case _:
            return None
