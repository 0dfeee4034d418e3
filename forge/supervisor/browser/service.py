"""The browser verbs on the socket, served over one browser host worker per profile.

The supervisor owns every client-facing fact (viewers, the controller role, seq windows, file
asks, download offers) in `RoleTable` and the parts beside this module; hosts are restartable
executors that know tabs, not viewers. `BrowserService` composes the parts, each one idea:
`hosts` (a profile's host: started, asked, closed when idle), `fanout` (a host's frames and
events to the tab's viewers), `tabs` (the tab list and its ownership), `views` (attach, detach,
layout), `gestures` (input, control, history, dialogs), `asks` (file choosers, downloads) and
`tabsound` (a tab's sound to those who hear it; the sound server is `sound.SoundService`'s).

`install(supervisor, manager)` registers the verbs; `forge supervise` calls it with its worker
manager. Profiles come from forge.toml (project, else org, else `default`), keyed `<org>/<name>`.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

from forge.ipc.manager import WorkerManager
from forge.logs import get_logger
from forge.supervisor.browser.asks import Asks
from forge.supervisor.browser.fanout import Fanout
from forge.supervisor.browser.gestures import Gestures
from forge.supervisor.browser.hosts import Hosts, Profile
from forge.supervisor.browser.sound import SoundService
from forge.supervisor.browser.tabroles import RoleTable
from forge.supervisor.browser.tabs import TabList
from forge.supervisor.browser.tabsound import TabSound
from forge.supervisor.browser.views import Views
from forge.supervisor.service import WorkerService
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.core import Supervisor
from forge.wire.client import (
    BrowserAudio,
    BrowserControl,
    BrowserDetach,
    BrowserDialogAnswer,
    BrowserFileAnswer,
    BrowserInput,
    BrowserNav,
    BrowserNavigate,
    BrowserOpen,
    BrowserResize,
    BrowserTabs,
    BrowserView,
    BrowserViewPage,
)
from forge.workers.browser.protocol import sandbox_off

log = get_logger(__name__)


class BrowserService(WorkerService):
    """Every browser verb, the profiles' hosts, and the fan-out of their frames and events."""

    name = "browser"

    def __init__(
        self, supervisor: Supervisor, manager: WorkerManager, *, euid: int | None = None
    ) -> None:
        """`euid`: the user Chromium runs as (this process's, unless a test says another)."""
        super().__init__(supervisor, manager)
        self.clock = supervisor.clock
        self.table = RoleTable()
        self.profiles: dict[str, Profile] = {}
        self.sandbox_off = sandbox_off(os.geteuid() if euid is None else euid)
        """Why every profile's Chromium runs unsandboxed (its rows and home say it); None when
        it runs sandboxed."""
        self.hosts = Hosts(self)
        self.fanout = Fanout(self)
        self.tabs = TabList(self)
        self.views = Views(self)
        self.gestures = Gestures(self)
        self.asks = Asks(self)
        self.hearing = TabSound(self)
        self.sound = SoundService(
            manager,
            enabled=supervisor.loaded.config.browser.audio,
            on_change=self.hearing.sound_changed,
        )

    def install(self) -> None:
        verbs: list[tuple[type[Any], Callable[[Connection, Any], Awaitable[None]]]] = [
            (BrowserView, self.views.view),
            (BrowserViewPage, self.views.view_page),
            (BrowserDetach, self.views.detach),
            (BrowserResize, self.views.resize),
            (BrowserInput, self.gestures.input),
            (BrowserControl, self.gestures.control),
            (BrowserNav, self.gestures.nav),
            (BrowserNavigate, self.gestures.navigate),
            (BrowserDialogAnswer, self.gestures.dialog_answer),
            (BrowserFileAnswer, self.asks.file_answer),
            (BrowserTabs, self.tabs.tabs),
            (BrowserOpen, self.tabs.open),
            (BrowserAudio, self.hearing.toggle),
        ]
        for message_type, handler in verbs:
            self.supervisor.register_verb(message_type, handler)
        self.supervisor.on_disconnect(self._disconnected)
        self.supervisor.home_fields["browser_sandbox_off"] = lambda: self.sandbox_off
        if self.sandbox_off is not None:
            log.warning("browser_sandbox_off", why=self.sandbox_off)
        super().install()

    def _disconnected(self, connection: Connection) -> None:
        for profile in self.profiles.values():
            profile.followers.discard(connection)
        self.gestures.forget(connection)
        self.hearing.muted.discard(connection)
        self.views.left(connection)


def install(supervisor: Supervisor, manager: WorkerManager) -> BrowserService:
    """Serve the browser verbs on `supervisor`, starting hosts through `manager`."""
    service = BrowserService(supervisor, manager)
    service.install()
    return service
