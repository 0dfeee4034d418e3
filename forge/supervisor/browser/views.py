"""Viewing a tab: attach (`browser_view`, `browser_view_page`), detach, and its layout (BR01-BR08).

A connection views at most one tab. An attach starts the profile's host if need be, checks the
tab is open, tells the host which formats its viewers want, and answers in one order: the reply
(or nothing), `browser_view`, the navigation state, then the kept frame; until then the viewer is
`warming` (no frames, and the newest navigation move is held for after the view). A refused
attach drops what the connection viewed and says why (BR04). Whenever a tab's viewers change,
every viewer is told who drives (BR07), and the tab is laid out at its layout owner's size (BR08).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import TYPE_CHECKING

from forge.logs import get_logger
from forge.supervisor.browser.fanout import connection_of, nav_state
from forge.supervisor.browser.hosts import Profile
from forge.supervisor.browser.tabroles import Size, Surface, check_size
from forge.supervisor.socket.connection import Connection
from forge.wire import browser, server
from forge.wire.client import BrowserDetach, BrowserResize, BrowserView, BrowserViewPage, ReplyTo
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat
from forge.workers.browser.protocol import NavState, Page, Resize, Tabs, View

if TYPE_CHECKING:
    from forge.supervisor.browser.service import BrowserService

log = get_logger(__name__)


class Views:
    """Who views which tab, as the connections and the hosts are told it."""

    def __init__(self, browser: BrowserService) -> None:
        self._browser = browser
        self.warming: dict[Hashable, NavState | None] = {}
        """Connections attached whose browser_view and nav state are not sent yet: no frames,
        and no nav state before the view; the newest move meanwhile is sent after it."""

    async def view(self, connection: Connection, message: BrowserView) -> None:
        async def resolve(profile: Profile) -> int:
            if message.tab is not None:
                return message.tab
            current = self._browser.tabs.seat_tabs.get(message.seat)
            if current is not None and current[0] == profile.key:
                return current[1]
            if not profile.rows:
                profile.rows = (await self._browser.hosts.ask("browser_view", profile, Tabs())).rows
            if not profile.rows:
                raise ClientRefusal("browser_view", "the browser has no tab open", message.seat)
            return min(row.number for row in profile.rows)

        await self._attach(connection, "browser_view", message.seat, message.reply_to, resolve)

    async def view_page(self, connection: Connection, message: BrowserViewPage) -> None:
        async def resolve(profile: Profile) -> int:
            page = Page(target=message.target)
            try:
                found = await self._browser.hosts.ask("browser_view_page", profile, page)
            except ClientRefusal as refusal:
                rows = self._browser.tabs.rows(profile)
                raise PageGone(refusal.why, message.target, rows) from None
            return found.tab

        await self._attach(connection, "browser_view_page", message.seat, message.reply_to, resolve)

    async def _attach(
        self,
        connection: Connection,
        what: str,
        seat: Seat,
        reply_to: ReplyTo | None,
        resolve: Callable[[Profile], Awaitable[int]],
    ) -> None:
        hosts, table = self._browser.hosts, self._browser.table
        asked: int | None = None
        try:
            profile = await hosts.host(what, seat)
            asked = await resolve(profile)
            rows = (await hosts.ask(what, profile, Tabs())).rows
            if asked not in {row.number for row in rows}:
                open_now = ", ".join(str(row.number) for row in rows) or "none"
                raise ClientRefusal(what, f"tab {asked} is not open (open tabs: {open_now})", seat)
        except ClientRefusal as refusal:
            self._refuse_attach(connection, what, asked, refusal, reply_to)
            return
        surface = (profile.key, asked)
        attached = table.attach(connection, surface, jpeg="jpeg" in connection.formats)
        viewer = attached.viewer
        log.info(
            "browser_attach",
            profile=profile.key,
            tab=asked,
            from_profile=attached.left[0] if attached.left else None,
            from_tab=attached.left[1] if attached.left else None,
            same_surface=attached.same_surface,
        )
        if attached.left is not None:
            await self.surface_changed(attached.left, released_by=attached.released)
        self._browser.tabs.seat_tabs[seat] = surface
        self.warming[connection] = None
        try:
            webp, jpeg = table.formats(surface)
            nav = await hosts.ask(what, profile, View(tab=asked, webp=webp, jpeg=jpeg))
            self.warming[connection] = None  # the answer is newer than any move before it
            await self.apply_layout(profile, surface)
            await self._browser.hearing.fit_listening(what, profile, surface)
        except ClientRefusal as refusal:
            self.warming.pop(connection, None)
            table.detach(connection)
            self._refuse_attach(connection, what, asked, refusal, reply_to)
            return
        except BaseException:  # the connection went away meanwhile
            self.warming.pop(connection, None)
            raise
        if reply_to is not None:
            connection.send(
                server.Reply(
                    reply_to=reply_to, body=browser.Attached(profile=profile.key, tab=asked)
                )
            )
        self.push_view(profile, surface)
        connection.send(nav_state(profile, self.warming.pop(connection, None) or nav))
        kept = (profile.kept if viewer.jpeg else profile.kept_webp).get(asked)
        if kept is not None:
            connection.send_latest((profile.wire_id, asked), kept)
        self._browser.asks.offer(profile)

    def _refuse_attach(
        self,
        connection: Connection,
        what: str,
        asked: int | None,
        refusal: ClientRefusal,
        reply_to: ReplyTo | None,
    ) -> None:
        """BR04: a refused attach drops what the connection viewed, and says why."""
        table = self._browser.table
        left = table.viewer_of(connection)
        left_surface = left.surface if left is not None else None
        if left_surface is not None:
            released = table.detach(connection)
            self._browser.tasks.spawn(self.surface_changed(left_surface, released_by=released))
        log.info(
            "browser_attach_refused",
            tab=asked,
            left_profile=left_surface[0] if left_surface else None,
            left_tab=left_surface[1] if left_surface else None,
            why=refusal.why,
        )
        if reply_to is not None:
            body = (
                refusal.body if isinstance(refusal, PageGone) else server.Refused(why=refusal.why)
            )
            connection.send(server.Reply(reply_to=reply_to, body=body))
        else:
            connection.send(server.Error(what=what, why=refusal.why, seat=refusal.seat))

    async def detach(self, connection: Connection, message: BrowserDetach) -> None:
        viewer = self._browser.table.viewer_of(connection)
        if viewer is None:
            return
        released = self._browser.table.detach(connection)
        await self.surface_changed(viewer.surface, released_by=released)

    def left(self, connection: Connection) -> None:
        """The connection closed: what it viewed goes on without it."""
        viewer = self._browser.table.viewer_of(connection)
        if viewer is not None:
            released = self._browser.table.detach(connection)
            self._browser.tasks.spawn(self.surface_changed(viewer.surface, released_by=released))

    async def surface_changed(self, surface: Surface, *, released_by: bool) -> None:
        """A viewer left `surface`: tell the others, and fit the host's work to who is left."""
        profile = self._browser.profiles[surface[0]]
        if released_by:
            log.info("browser_role_released", profile=surface[0], tab=surface[1])
        self.push_view(profile, surface)
        self._browser.hosts.touch(profile)
        self._browser.tabs.push(profile)  # BR06: the idle deadline moved (`closing_at_ms`)
        if not profile.up:
            return
        webp, jpeg = self._browser.table.formats(surface)
        view = View(tab=surface[1], webp=webp, jpeg=jpeg)
        try:
            await self._browser.hosts.ask("browser_detach", profile, view)
            await self.apply_layout(profile, surface)
            await self._browser.hearing.fit_listening("browser_detach", profile, surface)
        except ClientRefusal as refusal:
            log.debug("browser_view_update_failed", profile=surface[0], why=refusal.why)

    def push_view(self, profile: Profile, surface: Surface) -> None:
        """BR07: every viewer of the tab draws the same truth about who drives."""
        table = self._browser.table
        for viewer in table.viewers(surface):
            connection_of(viewer).send(table.view_state(viewer, profile.wire_id))

    # --- layout (BR08) --------------------------------------------------------------------

    async def resize(self, connection: Connection, message: BrowserResize) -> None:
        size = Size(message.width, message.height, message.scale)
        wrong = check_size(size)
        if wrong is not None:
            raise ClientRefusal("browser_resize", wrong)
        viewer = self._browser.table.viewer_of(connection)
        if viewer is None:
            raise ClientRefusal("browser_resize", "this connection is not viewing a browser tab")
        viewer.size = size
        await self.apply_layout(self._browser.profiles[viewer.surface[0]], viewer.surface)

    async def apply_layout(self, profile: Profile, surface: Surface) -> None:
        """Give the tab its layout owner's size; a size already in place asks nothing."""
        size = self._browser.table.layout(surface)
        if size is None or profile.layout.get(surface[1]) == size:
            return
        profile.layout[surface[1]] = size
        resize = Resize(tab=surface[1], width=size.width, height=size.height, scale=size.scale)
        await self._browser.hosts.ask("browser_resize", profile, resize)


class PageGone(ClientRefusal):
    """O-BR4: a page id no tab carries; the refusal lists the tabs open now."""

    def __init__(self, why: str, target: str, rows: list[browser.TabRow]) -> None:
        super().__init__("browser_view_page", why)
        self.body = browser.PageGone(why=why, target=target, tabs=rows)
