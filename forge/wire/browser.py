"""What the server sends about browser tabs: every `browser_*` message and reply body, typed.

Each message is a frozen struct tagged on `kind`, so `msgspec` writes `kind` first and then the
fields in the order declared here: the bytes a client reads are these declarations (BR03-BR22,
D5). A reply body (`reply{reply_to, body}`) is an untagged struct: `{ok, ...}`. The supervisor
builds browser messages only from these; the browser worker's tab rows carry `Dialog` as is.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from forge.wire.seats import Seat
from forge.wire.server import Refused, ServerMessage


class Dialog(msgspec.Struct, frozen=True):
    """The JavaScript dialog holding a tab (O-BR14: alert, confirm, prompt or beforeunload)."""

    kind: str
    message: str


class TabRow(msgspec.Struct, frozen=True, kw_only=True):
    """One tab as `browser_tabs` lists it (BR19, BR20)."""

    number: int
    title: str
    url: str
    owner: Seat | None
    """The seat that `browser_open`ed it; null for a boot tab no call adopted (O-BR14)."""
    opener: int | None
    state: Literal["idle"] = "idle"
    """Always idle: wave 1 has no agent driving a tab."""
    dialog: Dialog | None


class TabsState(msgspec.Struct, frozen=True, kw_only=True):
    """A profile's browser as `browser_tabs` pushes it and its `reply_to` answer carries it."""

    profile: str
    id: int
    up: bool
    connected: bool = False
    """Always false: no agent driver in wave 1."""
    closing_at_ms: int | None
    """When the idle clock closes the host (O-BR13); null while it is down."""
    audio_off: str | None = None
    """Why the profile's sound does not reach its viewers now, in one line; null when it does
    (or nothing plays)."""
    sandbox_off: str | None = None
    """Why the profile's Chromium runs without its own sandbox (forge runs as root), in one
    line; null when it runs sandboxed."""
    rows: list[TabRow]


class BrowserTabs(TabsState, ServerMessage, frozen=True, kw_only=True, tag="browser_tabs"):
    """Pushed to every connection that asked `browser_tabs` for the profile, on any change."""


class BrowserView(ServerMessage, frozen=True, kw_only=True, tag="browser_view"):
    """BR07: the same truth about who drives, for every viewer of a tab."""

    id: int
    profile: str
    tab: int
    controller: int | None
    viewers: int
    viewer: int


class BrowserNavState(ServerMessage, frozen=True, kw_only=True, tag="browser_nav_state"):
    """BR16: where the tab's history sits (after an attach, a nav, the page's own move)."""

    id: int
    tab: int
    can_back: bool
    can_forward: bool


class BrowserSurfaceFailed(ServerMessage, frozen=True, kw_only=True, tag="browser_surface_failed"):
    """BR21: the tab's surface is gone (closed, its host or Chromium died); the viewer is
    detached."""

    id: int
    tab: int
    reason: str


class BrowserFileDialog(ServerMessage, frozen=True, kw_only=True, tag="browser_file_dialog"):
    """BR18: a page asks for files; only the asking tab's controller hears it."""

    id: int
    """The ask's id, which `browser_file_answer` names."""
    tab: int
    multiple: bool


class BrowserDownload(ServerMessage, frozen=True, kw_only=True, tag="browser_download"):
    """BR22, O-BR9: a finished download offered to the tab's controller, or (`dropped`) the
    notice that `lost` offers waited too long; the notice has no `tab`, an offer no `lost`."""

    tab: int | UnsetType | None = UNSET
    name: str | None
    data: str | None
    """The file's bytes in base64; null with `error`, or in a loss notice."""
    error: str | None
    dropped: bool = False
    lost: int | UnsetType = UNSET

    @classmethod
    def loss(cls, lost: int) -> BrowserDownload:
        return cls(name=None, data=None, error=None, dropped=True, lost=lost)


# Reply bodies (the `body` of `reply{reply_to, body}` to a browser verb asked with reply_to).


class PageGone(Refused, frozen=True, kw_only=True):
    """O-BR4: `browser_view_page` for a page no tab carries, with the tabs open now."""

    target: str
    tabs: list[TabRow]


class Done(msgspec.Struct, frozen=True, kw_only=True):
    """A verb that answers nothing but that it landed (`browser_dialog_answer`)."""

    ok: Literal[True] = True


class Attached(Done, frozen=True, kw_only=True):
    """`browser_view` and `browser_view_page`: the tab this connection now views."""

    profile: str
    tab: int


class Opened(Done, frozen=True, kw_only=True):
    """`browser_open`: the new tab's number."""

    tab: int


class Tabs(Done, frozen=True, kw_only=True):
    """`browser_tabs`: the profile's browser now (pushes follow)."""

    tabs: TabsState
