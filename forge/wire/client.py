"""Every JSON message a client sends, decoded into a typed message, or refused in words.

Each message is a frozen struct tagged on `kind`; unknown extra fields are ignored (O-S14).
`decode_client` never raises anything but `ClientRefusal(what="client_message")`, whose `why` names
the kind and the field that was wrong (S17), so the connection answers and stays up.
Verbs that later areas serve (terminal_*, browser_*) are typed here already: an area only
registers a handler for the type.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Iterable
from typing import Any

import msgspec

from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat, Subject

ReplyTo = int | str
"""O-S9: a JSON int or string, echoed verbatim in `reply{reply_to, body}`."""


class ClientMessage(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    """Base of every client message; the subclass's tag is its `kind`."""


class Ping(ClientMessage, frozen=True, tag="ping"):
    """A liveness probe; answered with `pong` and nothing else (T12)."""


class Subscribe(ClientMessage, frozen=True, tag="subscribe"):
    what: Subject
    answering: bool = False
    review: bool = False


class Unsubscribe(ClientMessage, frozen=True, tag="unsubscribe"):
    what: Subject


class Showing(ClientMessage, frozen=True, tag="showing"):
    """Which seat this connection has on screen; null (or absent) for none."""

    seat: Seat | None = None


class SeatRange(ClientMessage, frozen=True, tag="seat_range"):
    slot: Seat
    epoch: str | None
    from_: int = msgspec.field(name="from")
    to: int


class Command(ClientMessage, frozen=True, tag="command"):
    """`command` is the core's Command enum, externally tagged: `{"name": {...}}` or `"name"`."""

    command: str | dict[str, Any]
    reply_to: ReplyTo | None = None


# Terminal verbs (served by the terminal host area).


class TerminalView(ClientMessage, frozen=True, tag="terminal_view"):
    seat: Seat
    id: int | None = None
    reply_to: ReplyTo | None = None


class TerminalDetach(ClientMessage, frozen=True, tag="terminal_detach"):
    pass


class TerminalResize(ClientMessage, frozen=True, tag="terminal_resize"):
    seat: Seat
    id: int
    cols: int
    rows: int


class TerminalPause(ClientMessage, frozen=True, tag="terminal_pause"):
    paused: bool


class TerminalAck(ClientMessage, frozen=True, tag="terminal_ack"):
    """The page has parsed the viewed terminal's chunks up to `seq`. A browser reads its socket
    as fast as bytes come, so only the page knows how far behind it is: while it controls, what
    it has been sent and not parsed paces the shell."""

    seq: int


class TerminalControl(ClientMessage, frozen=True, tag="terminal_control"):
    seat: Seat
    id: int
    take: bool


class TerminalClose(ClientMessage, frozen=True, tag="terminal_close"):
    seat: Seat
    id: int


# Browser verbs (served by the browser host area).


class Modifiers(msgspec.Struct, frozen=True):
    alt: bool = False
    ctrl: bool = False
    meta: bool = False
    shift: bool = False


class Press(msgspec.Struct, frozen=True):
    x: float
    y: float
    button: str
    down: bool
    clicks: int = 1
    mods: Modifiers = Modifiers()


class Move(msgspec.Struct, frozen=True):
    x: float
    y: float
    buttons: int = 0
    mods: Modifiers = Modifiers()


class Wheel(msgspec.Struct, frozen=True):
    x: float
    y: float
    dx: float
    dy: float
    mods: Modifiers = Modifiers()


class Key(msgspec.Struct, frozen=True):
    key: str
    code: str
    down: bool
    mods: Modifiers = Modifiers()


class Text(msgspec.Struct, frozen=True):
    text: str
    mods: Modifiers = Modifiers()


Gesture = Press | Move | Wheel | Key | Text
GESTURES: dict[str, type[Gesture]] = {
    "press": Press,
    "move": Move,
    "wheel": Wheel,
    "key": Key,
    "text": Text,
}
"""O-BR1: a gesture is `{"<name>": {fields}}`; press, wheel, key and text are discrete."""


def is_discrete(gesture: Gesture) -> bool:
    """A move is a stream; everything else is a discrete gesture that a refusal records
    (BR10, BR11)."""
    return not isinstance(gesture, Move)


def record_fields(gesture: Gesture) -> dict[str, object]:
    """What a refusal record may hold: the kind and, for text, the count, never the characters
    (BR12)."""
    if isinstance(gesture, Text):
        return {"gesture": "text", "chars": len(gesture.text)}
    return {"gesture": type(gesture).__name__.lower()}


class BrowserView(ClientMessage, frozen=True, tag="browser_view"):
    seat: Seat
    tab: int | None = None
    reply_to: ReplyTo | None = None


class BrowserViewPage(ClientMessage, frozen=True, tag="browser_view_page"):
    seat: Seat
    target: str
    reply_to: ReplyTo | None = None


class BrowserDetach(ClientMessage, frozen=True, tag="browser_detach"):
    pass


class BrowserResize(ClientMessage, frozen=True, tag="browser_resize"):
    width: int
    height: int
    scale: float = 1.0


class BrowserInput(ClientMessage, frozen=True, tag="browser_input"):
    seq: int
    event: dict[str, Any]

    def gesture(self) -> Gesture:
        """The typed gesture, or a refusal naming browser_input when the event is not one."""
        if len(self.event) != 1:
            raise ClientRefusal("browser_input", "an event names exactly one gesture")
        ((name, fields),) = self.event.items()
        shape = GESTURES.get(name)
        if shape is None:
            raise ClientRefusal("browser_input", f"unknown gesture `{name}`")
        try:
            return msgspec.convert(fields, shape)
        except msgspec.ValidationError as error:
            raise ClientRefusal("browser_input", f"{name}: {_plain(str(error))}") from None


class BrowserControl(ClientMessage, frozen=True, tag="browser_control"):
    take: bool


class BrowserNav(ClientMessage, frozen=True, tag="browser_nav"):
    back: bool


class FileUpload(msgspec.Struct, frozen=True):
    name: str
    data: str


class BrowserFileAnswer(ClientMessage, frozen=True, tag="browser_file_answer"):
    id: int
    files: list[FileUpload]


class BrowserTabs(ClientMessage, frozen=True, tag="browser_tabs"):
    seat: Seat
    reply_to: ReplyTo | None = None


class BrowserOpen(ClientMessage, frozen=True, tag="browser_open"):
    """D5, our addition: open a URL in a new tab of the seat's browser."""

    seat: Seat
    url: str
    reply_to: ReplyTo


class BrowserNavigate(ClientMessage, frozen=True, tag="browser_navigate"):
    """D5, our addition: navigate the viewed tab."""

    url: str


class BrowserAudio(ClientMessage, frozen=True, tag="browser_audio"):
    """Our addition: whether this connection hears the sound (kind 2) of the tabs it views."""

    on: bool
    reply_to: ReplyTo | None = None


DIALOG_TEXT_MAX_BYTES = 64 * 1024
"""A prompt answer is something a person types; past this it is refused, not truncated."""


class BrowserDialogAnswer(ClientMessage, frozen=True, tag="browser_dialog_answer"):
    """Our addition beside D5's: accept or dismiss the JavaScript dialog holding the viewed tab.

    `text` is typed loosely so a wrong one is refused through `reply_to`, by `prompt_text`.
    """

    accept: bool
    text: Any = None
    reply_to: ReplyTo | None = None

    def prompt_text(self) -> str | None:
        """The text for a `prompt()`, or a refusal naming browser_dialog_answer."""
        if self.text is None:
            return None
        if not isinstance(self.text, str):
            raise ClientRefusal("browser_dialog_answer", "text must be a string (or null)")
        size = len(self.text.encode())
        if size > DIALOG_TEXT_MAX_BYTES:
            why = f"text is {size} bytes of UTF-8; a dialog answer is at most 64 KiB"
            raise ClientRefusal("browser_dialog_answer", why)
        return self.text


# Dictation and voice verbs (served by the dictation area). `dictate_stop`, `dictate_cancel`,
# `voice_say` and `dictate_bench` are our additions to the protocol (docs/protocol.md, "Dictation
# and voice"): `dictate_stop` and `dictate_cancel` are what ends a take.


class DictateOptions(msgspec.Struct, frozen=True):
    """The axes the client's panel shows; an axis left out is forge.toml's `[dictate]` value."""

    styling: str | None = None
    structure: str | None = None
    context: str | None = None


class DictateStream(ClientMessage, frozen=True, tag="dictate_stream"):
    key: Seat
    options: DictateOptions | None = None
    surface: str | None = None


class DictateStop(ClientMessage, frozen=True, tag="dictate_stop"):
    """Capture ended: the open segment is decoded and the take's words land."""

    key: Seat
    send: bool = False
    """Also send the words as the seat's agent's next prompt (`source: "dictation"`): a take
    begun on the `composer` surface of a seat with an agent (else refused)."""


class DictateCancel(ClientMessage, frozen=True, tag="dictate_cancel"):
    """Drop the take: nothing lands."""

    key: Seat


class VoiceMode(ClientMessage, frozen=True, tag="voice_mode"):
    key: Seat
    on: bool
    explicit: bool = True


class VoicePreview(ClientMessage, frozen=True, tag="voice_preview"):
    key: Seat
    voice: str | None = None


VOICE_SAY_MAX_CHARS = 4000
"""A line to speak is a sentence or a short paragraph; past this it is refused, not cut."""


class VoiceSay(ClientMessage, frozen=True, tag="voice_say"):
    """Speak `text` on the seat's voice stream (`forge say`)."""

    key: Seat
    text: str
    voice: str | None = None
    reply_to: ReplyTo | None = None


class DictateBench(ClientMessage, frozen=True, tag="dictate_bench"):
    """Run the local corpus through the models in use (`forge dictate bench`)."""

    clips: list[str] | None = None
    """Corpus clips by name; null runs them all."""
    reply_to: ReplyTo | None = None


# Verbs of the protocol that `unserved` answers, so a client cannot loop on them (O-S11), and
# four that forge.supervisor's documents and settings services serve: document_read,
# document_list, file_content, settings_edit.


class More(ClientMessage, frozen=True, tag="more"):
    conversation: Seat
    before: Any = None
    turns: int | None = None


class DocumentRead(ClientMessage, frozen=True, tag="document_read"):
    session: Seat
    path: str
    reviewable: bool = False


class DocumentList(ClientMessage, frozen=True, tag="document_list"):
    session: Seat
    root: str | None = None
    """One of the project's `document_roots` as forge.toml spells it; null lists the seat's tree."""


class FileContent(ClientMessage, frozen=True, tag="file_content"):
    session: Any
    path: Any
    sha: Any = None


class ClientPerf(ClientMessage, frozen=True, tag="client_perf"):
    """A web page's own perf records, as the page serialised them (written, never answered)."""

    records: list[Any] = []


class SettingsEdit(ClientMessage, frozen=True, tag="settings_edit"):
    id: int | str
    fingerprint: str | None = None
    edits: list[Any] = []


CORE_MESSAGES: tuple[type[ClientMessage], ...] = (
    Ping,
    Subscribe,
    Unsubscribe,
    Showing,
    SeatRange,
    Command,
    TerminalView,
    TerminalDetach,
    TerminalResize,
    TerminalPause,
    TerminalAck,
    TerminalControl,
    TerminalClose,
    BrowserView,
    BrowserViewPage,
    BrowserDetach,
    BrowserResize,
    BrowserInput,
    BrowserControl,
    BrowserNav,
    BrowserFileAnswer,
    BrowserTabs,
    BrowserOpen,
    BrowserNavigate,
    BrowserDialogAnswer,
    DictateStream,
    DictateStop,
    DictateCancel,
    VoiceMode,
    VoicePreview,
    VoiceSay,
    DictateBench,
    BrowserAudio,
    More,
    DocumentRead,
    DocumentList,
    FileContent,
    ClientPerf,
    SettingsEdit,
)
"""The core protocol's client messages; an area's own verbs join them in `forge.wire.registry`."""


class ClientDecoder:
    """Decodes client text frames into the known messages plus any `extra` message types.

    `extra` lets the supervisor add verbs (its test drills) without widening the protocol surface
    every decoder knows; the production decoder is `decode_client`.
    """

    def __init__(self, extra: Iterable[type[ClientMessage]] = ()) -> None:
        shapes = (*CORE_MESSAGES, *extra)
        self.kinds: frozenset[str] = frozenset(str(shape.__struct_config__.tag) for shape in shapes)
        """Every `kind` this decoder takes; anything else is refused as client_message."""
        self._decoder: msgspec.json.Decoder[ClientMessage] = msgspec.json.Decoder(
            functools.reduce(operator.or_, shapes)
        )

    def decode(self, text: str | bytes) -> ClientMessage:
        """Decode one client text frame, or raise `ClientRefusal("client_message", why)`."""
        try:
            return self._decoder.decode(text)
        except msgspec.DecodeError as error:
            raise ClientRefusal("client_message", self._why(text, error)) from None
        except RecursionError:  # msgspec recurses once per level of nesting
            raise ClientRefusal("client_message", TOO_DEEP) from None

    def _why(self, text: str | bytes, error: msgspec.DecodeError) -> str:
        """One sentence naming the kind and the field that was wrong."""
        if not isinstance(error, msgspec.ValidationError):
            return f"the message is not valid JSON ({error})"
        try:
            shape = _probe.decode(text)
        except msgspec.DecodeError as malformed:  # a typed decode stops at the first wrong type
            return f"the message is not valid JSON ({malformed})"
        except RecursionError:  # one call deeper than `decode`: the limit may fall in between
            return TOO_DEEP
        if not isinstance(shape, dict):
            return "a message must be a JSON object tagged with `kind`"
        kind = shape.get("kind")
        if not isinstance(kind, str):
            return "a message must be a JSON object tagged with a string `kind`"
        if kind not in self.kinds:
            return f"unknown kind `{kind}`"
        return f"{kind}: {_plain(str(error))}"


TOO_DEEP = "the message nests arrays or objects deeper than the decoder follows"
_probe = msgspec.json.Decoder()
_default = ClientDecoder()
KINDS = _default.kinds
decode_client = _default.decode

_AT = re.compile(r" - at `\$\.?([^`]*)`$")


def _plain(message: str) -> str:
    """msgspec's "Expected `int`, got `str` - at `$.from`" as "`from`: expected `int`, ..."."""
    match = _AT.search(message)
    head = message[: match.start()] if match else message
    head = head[:1].lower() + head[1:]
    return f"`{match.group(1)}`: {head}" if match and match.group(1) else head
