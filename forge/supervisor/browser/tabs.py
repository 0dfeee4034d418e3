"""A profile's tab list (BR19, BR20) and who owns its tabs: `browser_tabs` and `browser_open`.

A connection that asks for a profile's tabs follows its row from then on: every change (a tab
opened, closed or retitled, the host up or gone, the idle deadline moved, its sound's trouble)
is pushed to it as `browser_tabs`. A tab opened for a seat (`browser_open`) is owned by it, and
is the tab that seat's next `browser_view` without a tab number shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from forge.supervisor.browser.hosts import Profile
from forge.supervisor.browser.tabroles import Surface
from forge.supervisor.socket.connection import Connection
from forge.wire import browser, server
from forge.wire.client import BrowserOpen, BrowserTabs
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat
from forge.workers.browser.protocol import Open

if TYPE_CHECKING:
    from forge.supervisor.browser.service import BrowserService

TabsShape = TypeVar("TabsShape", browser.TabsState, browser.BrowserTabs)


class TabList:
    """Each profile's rows as clients read them, their followers, and the seats' own tabs."""

    def __init__(self, browser: BrowserService) -> None:
        self._browser = browser
        self.seat_tabs: dict[Seat, Surface] = {}
        """The tab each seat showed or opened last (a `browser_view` without a tab shows it)."""

    def rows(self, profile: Profile) -> list[browser.TabRow]:
        return [
            browser.TabRow(
                number=row.number,
                title=row.title,
                url=row.url,
                owner=profile.owners.get(row.number),
                opener=row.opener,
                dialog=row.dialog,
            )
            for row in profile.rows
        ]

    def state(self, profile: Profile, shape: type[TabsShape]) -> TabsShape:
        """The profile's browser now: pushed as `browser_tabs`, or a `reply_to` answer's body."""
        return shape(
            profile=profile.key,
            id=profile.wire_id,
            up=profile.up,
            closing_at_ms=self._browser.hosts.closing_at_ms(profile),
            audio_off=self._browser.hearing.audio_off(profile),
            sandbox_off=self._browser.sandbox_off,
            rows=self.rows(profile),
        )

    def push(self, profile: Profile) -> None:
        if not profile.followers:
            return
        frame = server.JsonFrame.encode(self.state(profile, browser.BrowserTabs))
        for connection in profile.followers:
            connection.send_frame(frame)

    def forget(self, profile_key: str) -> None:
        """The profile's host is gone: no seat shows one of its tabs any more."""
        for seat, surface in list(self.seat_tabs.items()):
            if surface[0] == profile_key:
                del self.seat_tabs[seat]

    async def tabs(self, connection: Connection, message: BrowserTabs) -> None:
        try:
            profile = self._browser.hosts.profile_for("browser_tabs", message.seat)
        except ClientRefusal as refusal:
            if message.reply_to is None:
                raise
            connection.send(
                server.Reply(reply_to=message.reply_to, body=server.Refused(why=refusal.why))
            )
            return
        profile.followers.add(connection)
        if message.reply_to is not None:
            body = browser.Tabs(tabs=self.state(profile, browser.TabsState))
            connection.send(server.Reply(reply_to=message.reply_to, body=body))

    async def open(self, connection: Connection, message: BrowserOpen) -> None:
        hosts = self._browser.hosts
        try:
            profile = await hosts.host("browser_open", message.seat)
            opened = await hosts.ask("browser_open", profile, Open(url=message.url))
        except ClientRefusal as refusal:
            connection.send(
                server.Reply(reply_to=message.reply_to, body=server.Refused(why=refusal.why))
            )
            return
        tab = opened.tab
        profile.owners[tab] = message.seat
        self.seat_tabs[message.seat] = (profile.key, tab)
        connection.send(server.Reply(reply_to=message.reply_to, body=browser.Opened(tab=tab)))
        self.push(profile)
