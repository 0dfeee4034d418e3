"""What a tab asks of its controller: file choosers (BR17, BR18, O-BR10) and downloads (BR22,
O-BR9).

A page's file chooser is held by its host until answered; it is offered to the tab's controller,
once per controller (a new controller is offered it again), and only that controller's
`browser_file_answer` lands, its files handed to the host as payloads. A finished download is
offered to the tab's controller and then forgotten; without a controller it waits, up to
`DOWNLOAD_BACKLOG` per profile, the oldest dropped past it and the loss told to any controller.
"""

from __future__ import annotations

import base64
import itertools
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from forge.supervisor.browser.fanout import connection_of
from forge.supervisor.browser.hosts import REQUEST_S, Profile
from forge.supervisor.socket.connection import Connection
from forge.wire import browser
from forge.wire.client import BrowserFileAnswer
from forge.wire.errors import ClientRefusal
from forge.wire.files import FileAnswerRefused, decode_file_answer
from forge.workers.browser.protocol import DownloadDone, FileAnswer

if TYPE_CHECKING:
    from forge.supervisor.browser.service import BrowserService

DOWNLOAD_BACKLOG = 8
"""O-BR9: offers waiting for a controller, per profile; past it the oldest is dropped."""


@dataclass
class _Ask:
    profile: str
    host_ask: int
    tab: int
    multiple: bool
    sent_to: int | None = None
    """The viewer id of the controller it went to (asked once per controller)."""


class Asks:
    """The file choosers waiting for an answer and the downloads waiting for a controller."""

    def __init__(self, browser: BrowserService) -> None:
        self._browser = browser
        self._ids = itertools.count(1)
        self._asks: dict[int, _Ask] = {}

    def asked(self, profile: Profile, host_ask: int, tab: int, *, multiple: bool) -> None:
        """The host holds a page's file chooser: offer it to the tab's controller."""
        self._asks[next(self._ids)] = _Ask(profile.key, host_ask, tab, multiple)
        self.offer(profile)

    def withdrawn(self, profile: Profile, host_ask: int) -> None:
        """The page's chooser went away unanswered (its tab navigated or closed)."""
        for ask_id, ask in list(self._asks.items()):
            if ask.profile == profile.key and ask.host_ask == host_ask:
                del self._asks[ask_id]

    def forget(self, profile_key: str) -> None:
        """The profile's host is gone, and every chooser it held with it."""
        for ask_id, ask in list(self._asks.items()):
            if ask.profile == profile_key:
                del self._asks[ask_id]

    def offer(self, profile: Profile) -> None:
        """Each outstanding ask goes to its tab's controller, once per controller."""
        for ask_id, ask in self._asks.items():
            if ask.profile != profile.key:
                continue
            controller = self._browser.table.controller((profile.key, ask.tab))
            if controller is None or ask.sent_to == controller.id:
                continue
            ask.sent_to = controller.id
            connection_of(controller).send(
                browser.BrowserFileDialog(id=ask_id, tab=ask.tab, multiple=ask.multiple)
            )

    async def file_answer(self, connection: Connection, message: BrowserFileAnswer) -> None:
        what = "browser_file_answer"
        table = self._browser.table
        ask = self._asks.get(message.id)
        viewer = table.viewer_of(connection)
        if ask is None:
            raise ClientRefusal(what, f"no file chooser is waiting under id {message.id}")
        if viewer is None or table.controller((ask.profile, ask.tab)) is not viewer:
            raise ClientRefusal(what, "only the controller of the asking tab may answer")
        try:
            files = decode_file_answer([{"name": f.name, "data": f.data} for f in message.files])
        except FileAnswerRefused as refused:
            raise ClientRefusal(what, str(refused)) from None
        del self._asks[message.id]
        profile = self._browser.profiles[ask.profile]
        chosen = files or []
        if profile.handle is None:
            raise ClientRefusal(what, "the browser host is not running")
        answer = FileAnswer(ask=ask.host_ask, names=[f.name for f in chosen])
        payloads = tuple(f.data for f in chosen)
        await self._browser.ask_raw(
            profile.handle, answer, what=what, payloads=payloads, within=REQUEST_S
        )

    def download(
        self, profile: Profile, done: DownloadDone, payloads: tuple[memoryview, ...]
    ) -> None:
        offer = browser.BrowserDownload(
            tab=done.tab,
            name=done.name,
            data=base64.b64encode(payloads[0]).decode() if payloads else None,
            error=done.error,
        )
        profile.offers.append(offer)
        while len(profile.offers) > DOWNLOAD_BACKLOG:
            profile.offers.popleft()
            profile.lost += 1
        self.deliver(profile)

    def deliver(self, profile: Profile) -> None:
        """Each offer to its tab's controller (then forgotten); a loss notice to any controller."""
        table = self._browser.table
        waiting: deque[browser.BrowserDownload] = deque()
        for offer in profile.offers:
            tab = offer.tab if isinstance(offer.tab, int) else None
            controller = None if tab is None else table.controller((profile.key, tab))
            if controller is None:
                waiting.append(offer)
            else:
                connection_of(controller).send(offer)
        profile.offers = waiting
        if profile.lost:
            surfaces = sorted(table.surfaces(profile.key))
            controllers = [table.controller(s) for s in surfaces]
            holder = next((c for c in controllers if c is not None), None)
            if holder is not None:
                connection_of(holder).send(browser.BrowserDownload.loss(profile.lost))
                profile.lost = 0
