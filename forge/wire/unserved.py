"""Answers to verbs and commands the seed defines and this server does not serve yet (O-S11,
O-G4, O-S10).

Each answer is chosen so a client cannot loop on it: `more` gets an empty page with a null
cursor (an error would mean "ask again"), `file_content` a failed read (it has no error arm),
`settings_edit` a refusal that echoes the page's `id`, and `client_perf` nothing at all.
`document_read` is refused by name. `more` answers only for a started seat (`seat_of`): for a
seat that is not there the seed's refusal by name stands (S04), because an empty page would tell a
client the seat's history ended. A command the seed names and nothing serves is refused by name
(`unserved_command`), never as unknown. (Dictation and voice are served by the dictation area.)
"""

from __future__ import annotations

from forge.wire import server
from forge.wire.client import (
    ClientMessage,
    ClientPerf,
    DocumentRead,
    FileContent,
    More,
    SettingsEdit,
)
from forge.wire.commands import CommandCall
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat

UNSERVED = (More, DocumentRead, FileContent, ClientPerf, SettingsEdit)


def seat_of(message: ClientMessage) -> Seat | None:
    """The seat `message` answers for, which must have been started before it is answered."""
    match message:
        case More():
            return message.conversation
        case _:
            return None


def unserved_command(call: CommandCall) -> ClientRefusal:
    """A command the seed names that no area serves yet (O-S10): refused by its name."""
    return ClientRefusal("command", f"{call.name} is not supported by this server")


def answer_unserved(message: ClientMessage) -> server.Message | None:
    """The frame that answers `message` (None for no answer), or a refusal naming the verb."""
    match message:
        case More():
            return {
                "kind": "page",
                "conversation": message.conversation,
                "turns": [],
                "cursor": None,
            }
        case FileContent():
            return {
                "kind": "file_content",
                "session": message.session,
                "path": message.path,
                "sha": message.sha,
                "content": {"state": "failed", "why": "this server does not read files yet"},
            }
        case SettingsEdit():
            return {
                "kind": "settings_refused",
                "reason": "refused",
                "id": message.id,
                "message": "this server does not edit forge.toml yet",
                "key_path": None,
            }
        case DocumentRead():
            raise ClientRefusal(
                "document_read", "this server does not read documents yet", message.session
            )
        case _:
            return None
