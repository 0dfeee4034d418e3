"""Every socket message, registered once by its `kind` and direction.

A client message is a `ClientMessage` (`forge.wire.client`), a server message a `ServerMessage`
(`forge.wire.server`): frozen structs tagged on `kind`. This table is the protocol's one list of
them: the supervisor's decoder and `forge.client`'s frame decoder read it, `forge.wire.schema`
generates the web page's TypeScript from it, and a test holds docs/protocol.md to it.

Registering a new kind is one line: define its struct in its area's wire module, then add it to
`CLIENT` or `SERVER` below. A kind may be registered once per direction; the same kind both ways
(`terminal_view`, `document_read`...) is a request and the answer named after it.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec

from forge.errors import InternalError
from forge.wire import browser, client, dictate, documents, lab, server, settings, terminal


class Direction(StrEnum):
    CLIENT = "client"
    """What a client sends to the server."""
    SERVER = "server"
    """What the server sends to a client."""


CLIENT: tuple[type[client.ClientMessage], ...] = (
    *client.CORE_MESSAGES,
    lab.LabStart,
    lab.LabStop,
    lab.LabReport,
)
"""Every client message: the core protocol's, then the areas' own verbs."""

SERVER: tuple[type[server.ServerMessage], ...] = (
    server.Greeting,
    server.Settings,
    server.Pong,
    server.Snapshot,
    server.Update,
    server.SeatFrames,
    server.Error,
    server.Reply,
    server.Page,
    terminal.TerminalView,
    terminal.TerminalControl,
    browser.BrowserTabs,
    browser.BrowserView,
    browser.BrowserNavState,
    browser.BrowserSurfaceFailed,
    browser.BrowserFileDialog,
    browser.BrowserDownload,
    dictate.DictateStarted,
    dictate.DictateLevel,
    dictate.DictatePhase,
    dictate.DictatePartial,
    dictate.DictateEnded,
    dictate.DictateFailed,
    dictate.VoiceModeState,
    dictate.VoiceAudio,
    documents.DocumentRead,
    documents.DocumentList,
    documents.FileContent,
    settings.SettingsSaved,
    settings.SettingsRefused,
)
"""Every server message: the envelopes, then the areas' own."""


def kind_of(shape: type[msgspec.Struct]) -> str:
    """The `kind` a message struct is tagged with."""
    return str(shape.__struct_config__.tag)


class Registry:
    """kind → struct, per direction; a kind registered twice in one direction is a bug."""

    def __init__(
        self,
        client_messages: tuple[type[msgspec.Struct], ...],
        server_messages: tuple[type[msgspec.Struct], ...],
    ) -> None:
        self._shapes: dict[Direction, dict[str, type[msgspec.Struct]]] = {}
        for direction, shapes in (
            (Direction.CLIENT, client_messages),
            (Direction.SERVER, server_messages),
        ):
            table: dict[str, type[msgspec.Struct]] = {}
            for shape in shapes:
                kind = kind_of(shape)
                if kind in table:
                    raise InternalError(
                        f"{direction} kind `{kind}` is registered twice: "
                        f"{table[kind].__qualname__} and {shape.__qualname__}"
                    )
                table[kind] = shape
            self._shapes[direction] = table

    def kinds(self, direction: Direction) -> frozenset[str]:
        return frozenset(self._shapes[direction])

    def shapes(self, direction: Direction) -> tuple[type[msgspec.Struct], ...]:
        """The direction's structs, in registration order."""
        return tuple(self._shapes[direction].values())

    def shape(self, direction: Direction, kind: str) -> type[msgspec.Struct] | None:
        """The struct registered for `kind` in `direction`, or None."""
        return self._shapes[direction].get(kind)


REGISTRY = Registry(CLIENT, SERVER)
