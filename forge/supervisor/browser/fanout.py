"""What a browser host sends, handed to the tab's viewers: frames, navigation states and events.

A tab's frames arrive ready-made on the host's `tab:<n>` stream and are handed, the same bytes,
to each viewer's newest-wins queue (B06, B07): format 2 (JPEG) only to connections that declared
`formats=webp,jpeg`, which then skip the WebP motion frames; key frames (format 1) to everyone
(D3). The newest frame of each tab is kept for the next viewer. A viewer still attaching
(`Views.warming`) gets nothing until its `browser_view` is sent. A tab that closes or a host that
fails is said out loud to its viewers (BR21), who are then detached.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from forge.ipc import manager as ipc
from forge.ipc.messages import StreamFrame
from forge.supervisor.browser.hosts import Profile
from forge.supervisor.browser.tabroles import Viewer
from forge.supervisor.socket.connection import Connection
from forge.wire import browser
from forge.wire.binary import BROWSER_FRAME_HEADER, FORMAT_JPEG
from forge.workers.browser.protocol import (
    AUDIO_STREAM,
    BROWSER,
    DownloadDone,
    FileDialog,
    FileDialogGone,
    NavMoved,
    NavState,
    SoundTrouble,
    SurfaceFailed,
    TabRow,
    TabsChanged,
    stream_tab,
)

if TYPE_CHECKING:
    from forge.supervisor.browser.service import BrowserService


class Fanout:
    """A host's streams and events, turned into what each viewer of its tabs is sent."""

    def __init__(self, browser: BrowserService) -> None:
        self._browser = browser

    def frame(self, profile: Profile, frame: StreamFrame) -> None:
        if frame.stream_id == AUDIO_STREAM:
            self._browser.hearing.frame(profile, bytes(frame.payload))
            return
        data = bytes(frame.payload)
        _, wire_id, tab, _, _, _, image_format, key, _, _ = BROWSER_FRAME_HEADER.unpack_from(data)
        profile.kept[tab] = data
        if image_format != FORMAT_JPEG:
            profile.kept_webp[tab] = data
        warming = self._browser.views.warming
        for viewer in self._browser.table.viewers((profile.key, tab)):
            if viewer.connection in warming:
                continue
            if image_format == FORMAT_JPEG and not viewer.jpeg:
                continue
            if image_format != FORMAT_JPEG and not key and viewer.jpeg:
                continue
            connection_of(viewer).send_latest((wire_id, tab), data)

    def end(self, profile: Profile, stream: str, reason: str) -> None:
        """A tab stream ended: its host stopped, crashed, or its Chromium died (its words)."""
        if stream == AUDIO_STREAM:
            return  # the tabs' own streams say what happened to them
        tab = stream_tab(stream)
        if reason == "worker_stopped":
            self.surface_failed(profile, [tab], reason)
            return
        hosts = self._browser.hosts
        hosts.failing(profile)
        viewed = {surface[1] for surface in self._browser.table.surfaces(profile.key)}
        self.surface_failed(profile, sorted(viewed | {tab}), reason)
        hosts.gone(profile)

    def event(self, profile: Profile, event: ipc.WorkerEvent) -> None:
        match BROWSER.decode_event(event.event, event.data):
            case TabsChanged(rows=rows):
                self._rows_changed(profile, rows)
            case NavMoved(state=state):
                self.send_nav_state(profile, state)
            case FileDialog(ask=host_ask, tab=tab, multiple=multiple):
                self._browser.asks.asked(profile, host_ask, tab, multiple=multiple)
            case FileDialogGone(ask=host_ask):
                self._browser.asks.withdrawn(profile, host_ask)
            case DownloadDone() as done:
                self._browser.asks.download(profile, done, event.payloads)
            case SoundTrouble(why=why):
                profile.sound_trouble = why
                self._browser.tabs.push(profile)
            case SurfaceFailed(reason=reason, tabs=tabs):
                self._browser.hosts.failing(profile)
                self.surface_failed(profile, tabs, reason)
                self._browser.hosts.gone(profile)

    def _rows_changed(self, profile: Profile, rows: list[TabRow]) -> None:
        profile.rows = rows
        open_now = {row.number for row in rows}
        gone = [s[1] for s in self._browser.table.surfaces(profile.key) if s[1] not in open_now]
        if gone:
            self.surface_failed(profile, gone, "the tab closed")
        self._browser.tabs.push(profile)

    def surface_failed(self, profile: Profile, tabs: list[int], reason: str) -> None:
        """BR21: said out loud to every viewer of those tabs, who are then detached."""
        table = self._browser.table
        for tab in tabs:
            for viewer in table.viewers((profile.key, tab)):
                connection_of(viewer).send(
                    browser.BrowserSurfaceFailed(id=profile.wire_id, tab=tab, reason=reason)
                )
                table.detach(viewer.connection)
            profile.kept.pop(tab, None)
            profile.kept_webp.pop(tab, None)
            profile.layout.pop(tab, None)

    def send_nav_state(self, profile: Profile, state: NavState) -> None:
        message = nav_state(profile, state)
        warming = self._browser.views.warming
        for viewer in self._browser.table.viewers((profile.key, state.tab)):
            if viewer.connection in warming:
                warming[viewer.connection] = state
            else:
                connection_of(viewer).send(message)


def nav_state(profile: Profile, state: NavState) -> browser.BrowserNavState:
    """BR16: the host's answer as the profile's viewers read it."""
    return browser.BrowserNavState(
        id=profile.wire_id, tab=state.tab, can_back=state.can_back, can_forward=state.can_forward
    )


def connection_of(viewer: Viewer) -> Connection:
    connection = viewer.connection
    assert isinstance(connection, Connection)
    return connection
