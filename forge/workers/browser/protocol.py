"""The browser worker's protocol: what the supervisor asks a profile's host, and what it hears.

One host process per browser profile. The supervisor asks it with the requests below and hears
the page's own doings as events; each viewed tab's ready-made kind-1 frames ride their own bulk
stream (`tab_stream`), and every listened tab's kind-2 frames one stream (`AUDIO_STREAM`).
This module is all the supervisor imports of `forge.workers.browser`: besides the messages, the
worker's config and the check a supervisor makes before it spawns one (`check_executable`, the
same one the host makes).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from forge.errors import UserError
from forge.ipc.policy import LifecycleTimings
from forge.ipc.protocol import WorkerEvent, WorkerProtocol, WorkerRequest
from forge.wire.browser import Dialog

DEFAULT_EXECUTABLE = Path("/usr/bin/chromium")

TAB_STREAM_PREFIX = "tab:"
AUDIO_STREAM = "audio"
"""The bulk stream of the profile's kind-2 frames, each naming its tab in its header."""


def tab_stream(tab: int) -> str:
    """The bulk stream that carries one tab's kind-1 frames."""
    return f"{TAB_STREAM_PREFIX}{tab}"


def stream_tab(stream: str) -> int:
    """The tab number of a `tab_stream` name."""
    return int(stream.removeprefix(TAB_STREAM_PREFIX))


class AudioRoute(msgspec.Struct, frozen=True):
    """Where the profile's sound goes: the sound server (`PULSE_SERVER`) and its null sink."""

    server: str
    sink: str


class BrowserConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The worker's config (its spec's `config`): one profile, and the Chromium to run."""

    profile_id: int
    """The wire id every kind-1 frame of this profile carries."""
    profile_key: str
    """`<org>/<name>`, for the records."""
    profile_dir: str
    """Chromium's user data, chosen uploads and downloads, side by side."""
    executable: str = str(DEFAULT_EXECUTABLE)
    home_url: str = "about:blank"
    audio: AudioRoute | None = None
    """Chromium plays into this sink; None: sound is off here (the supervisor says why)."""


class BrowserMissing(UserError):
    """The configured Chromium is not there: the person installs it or points forge at it."""

    def __init__(self, executable: Path) -> None:
        super().__init__(
            f"no Chromium at {executable}: install Debian's chromium package "
            "(apt-get install chromium) or set [browser] chromium_path in forge.toml"
        )
        self.executable = executable


NO_SANDBOX = "--no-sandbox"


def sandbox_off(euid: int) -> str | None:
    """Why Chromium runs without its own sandbox, in a line a person reads; None when it runs
    with it. Only as root: Chromium refuses to start sandboxed there, and as any other user
    Debian's Chromium sandboxes its renderers (user namespaces and seccomp) unasked."""
    if euid != 0:
        return None
    return f"forge runs as root, so Chromium runs without its sandbox ({NO_SANDBOX})"


def check_executable(executable: Path) -> None:
    """Raise `BrowserMissing` unless `executable` can be run (before spawning a host for it)."""
    if not os.access(executable, os.X_OK):
        raise BrowserMissing(executable)


# Answers.


class TabRow(msgspec.Struct, frozen=True):
    """What the host knows of a tab; the supervisor adds owner and state for `browser_tabs`."""

    number: int
    """Per host run, from 1, never reused (O-B3)."""
    target: str
    """Chromium's target id (a hand-off's page id)."""
    title: str
    url: str
    opener: int | None
    dialog: Dialog | None


class TabRows(msgspec.Struct, frozen=True):
    rows: list[TabRow]


class TabNumber(msgspec.Struct, frozen=True):
    tab: int


class NavState(msgspec.Struct, frozen=True):
    """Where a tab's history sits."""

    tab: int
    can_back: bool
    can_forward: bool


class FilesWritten(msgspec.Struct, frozen=True):
    paths: list[str]


# Requests.


class Tabs(WorkerRequest[TabRows], tag="tabs", frozen=True):
    """Every open tab, in number order."""


class Page(WorkerRequest[TabNumber], tag="page", frozen=True):
    """The tab a CDP target id (a hand-off's page id) has now; refused when it is not open."""

    target: str


class Open(WorkerRequest[TabNumber], tag="open", frozen=True):
    """A new tab in its own window; answered once the tab is followed."""

    url: str


class Navigate(WorkerRequest[None], tag="navigate", frozen=True):
    tab: int
    url: str


class Close(WorkerRequest[None], tag="close", frozen=True):
    tab: int


class View(WorkerRequest[NavState], tag="view", frozen=True):
    """Which formats the tab's viewers read; both false stops its screencast. A key frame
    follows on the tab's stream."""

    tab: int
    webp: bool = False
    jpeg: bool = False


class Resize(WorkerRequest[None], tag="resize", frozen=True):
    """Lay the tab out at a viewer's surface (device pixels, ratio); a key frame follows."""

    tab: int
    width: int
    height: int
    scale: float = 1.0


class Input(WorkerRequest[None], tag="input", frozen=True):
    """One O-BR1 gesture, sent on at once: the answer says it was handed to Chromium, not that it
    landed. A gesture the host cannot perform is refused `bad_gesture`."""

    tab: int
    event: dict[str, Any]


class Nav(WorkerRequest[NavState], tag="nav", frozen=True):
    """One step back or forward; with nowhere to go, the state unchanged."""

    tab: int
    back: bool


class DialogAnswer(WorkerRequest[None], tag="dialog_answer", frozen=True):
    tab: int
    accept: bool
    text: str | None = None


class Listen(WorkerRequest[None], tag="listen", frozen=True):
    """Whether any viewer of the tab hears its sound now; the sink is read while any tab is."""

    tab: int
    on: bool


class SoundServer(WorkerRequest[None], tag="sound_server", frozen=True):
    """The sound server came (back) up with this profile's sink: Chromium's audio starts afresh
    against it (a restarted PulseAudio is not reconnected to by Chromium on its own)."""


class FileAnswer(WorkerRequest[FilesWritten], tag="file_answer", frozen=True):
    """A chooser's answer: names here, the bytes as the request's payloads in the same order;
    no names dismisses."""

    ask: int
    names: list[str]


# Events.


class TabsChanged(WorkerEvent, tag="tabs", frozen=True):
    rows: list[TabRow]


class NavMoved(WorkerEvent, tag="nav_state", frozen=True):
    """The page moved on its own (a link, a redirect, a same-document move)."""

    state: NavState


class FileDialog(WorkerEvent, tag="file_dialog", frozen=True):
    """A page asked for files; `ask` is the id the answer must name (O-BR6)."""

    ask: int
    tab: int
    multiple: bool


class FileDialogGone(WorkerEvent, tag="file_dialog_gone", frozen=True):
    """The tab behind an outstanding ask closed: the ask is cancelled (O-BR10)."""

    ask: int


class DownloadDone(WorkerEvent, tag="download", frozen=True):
    """A finished download: its bytes ride as the event's one payload when it may cross, else
    `error` says why in words (BR22)."""

    tab: int | None
    name: str
    error: str | None


class SoundTrouble(WorkerEvent, tag="sound_trouble", frozen=True):
    """Why the profile's sound cannot be read now (the sound server went away), or None once it
    can again."""

    why: str | None


class SurfaceFailed(WorkerEvent, tag="surface_failed", frozen=True):
    """Chromium stopped: every viewed tab's surface is gone, for the reason given. The worker
    then exits to be restarted with a fresh Chromium."""

    reason: str
    tabs: list[int]


BROWSER = WorkerProtocol(
    kind="browser",
    module="forge.workers.browser",
    requests=(
        Tabs,
        Page,
        Open,
        Navigate,
        Close,
        View,
        Resize,
        Input,
        Nav,
        DialogAnswer,
        FileAnswer,
        Listen,
        SoundServer,
    ),
    events=(
        TabsChanged,
        NavMoved,
        FileDialog,
        FileDialogGone,
        DownloadDone,
        SoundTrouble,
        SurfaceFailed,
    ),
    streams=(TAB_STREAM_PREFIX, AUDIO_STREAM),
    # hello follows Chromium's start, which on a loaded machine takes well over the default 10 s
    # (seen at load 20: a worker killed as hung while its Chromium was still coming up).
    timings=LifecycleTimings(hello_timeout=30.0),
)
