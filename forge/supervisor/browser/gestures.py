"""Driving a tab: input, taking and releasing control, history, navigation, page dialogs
(BR09-BR16).

Only the tab's controller's input lands, and only above the seq high-water mark of its tenure
(`tabroles`); a watcher's refused discrete gesture is answered, its refused moves at most once a
second (O-BR3). Taking control always lands on an open tab, and brings the tab's waiting file
chooser and downloads to the new controller. A dialog's answer is recorded by its length only,
never its characters (a prompt may ask for a password).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from forge.logs import get_logger
from forge.supervisor.browser.hosts import Profile
from forge.supervisor.browser.tabroles import Verdict, Viewer
from forge.supervisor.socket.connection import Connection
from forge.wire import browser, server
from forge.wire.client import (
    BrowserControl,
    BrowserDialogAnswer,
    BrowserInput,
    BrowserNav,
    BrowserNavigate,
    is_discrete,
    record_fields,
)
from forge.wire.errors import ClientRefusal
from forge.workers.browser.protocol import DialogAnswer, Input, Nav, Navigate

if TYPE_CHECKING:
    from forge.supervisor.browser.service import BrowserService

log = get_logger(__name__)

REFUSED_MOVE_EVERY_S = 1.0
"""O-BR3: a watcher's refused moves are answered at most once a second per connection."""


class Gestures:
    """The verbs a tab's controller drives it with."""

    def __init__(self, browser: BrowserService) -> None:
        self._browser = browser
        self._refused_move_at: dict[Hashable, float] = {}

    def forget(self, connection: Connection) -> None:
        self._refused_move_at.pop(connection, None)

    async def input(self, connection: Connection, message: BrowserInput) -> None:
        gesture = message.gesture()
        verdict = self._browser.table.input(connection, message.seq)
        discrete = is_discrete(gesture)
        if verdict is Verdict.STALE:
            return
        if verdict is Verdict.UNATTACHED:
            if discrete:
                log.info("browser_input_unattached", **record_fields(gesture))
                raise ClientRefusal("browser_input", "this connection is not viewing a browser tab")
            return
        if verdict is Verdict.NOT_CONTROLLER:
            why = "only the tab's controller's input lands; take control first"
            if discrete:
                log.info("browser_input_refused", **record_fields(gesture))
                raise ClientRefusal("browser_input", why)
            now = self._browser.clock.monotonic()
            if now - self._refused_move_at.get(connection, -REFUSED_MOVE_EVERY_S) >= (
                REFUSED_MOVE_EVERY_S
            ):
                self._refused_move_at[connection] = now
                raise ClientRefusal("browser_input", why)
            return
        viewer = self._browser.table.viewer_of(connection)
        assert viewer is not None
        profile = self._browser.profiles[viewer.surface[0]]
        event = Input(tab=viewer.surface[1], event=message.event)
        await self._browser.hosts.ask("browser_input", profile, event)

    async def control(self, connection: Connection, message: BrowserControl) -> None:
        table, views = self._browser.table, self._browser.views
        viewer = table.viewer_of(connection)
        if not message.take:
            if viewer is not None and table.release(connection):
                profile = self._browser.profiles[viewer.surface[0]]
                log.info("browser_role_released", profile=profile.key, tab=viewer.surface[1])
                views.push_view(profile, viewer.surface)
                await views.apply_layout(profile, viewer.surface)
            return
        if viewer is None:
            reason = "this connection is not viewing a browser tab"
            has_browser = any(p.up for p in self._browser.profiles.values())
            log.info(
                "browser_control_unattached", take=True, has_browser=has_browser, reason=reason
            )
            raise ClientRefusal("browser_control", reason)
        profile = self._browser.profiles[viewer.surface[0]]
        open_now = {row.number for row in profile.rows}
        if not profile.up or viewer.surface[1] not in open_now:
            log.info("browser_control", landed=False, profile=profile.key, tab=viewer.surface[1])
            raise ClientRefusal("browser_control", f"tab {viewer.surface[1]} is no longer open")
        table.take(connection)
        log.info("browser_control", landed=True, profile=profile.key, tab=viewer.surface[1])
        views.push_view(profile, viewer.surface)
        await views.apply_layout(profile, viewer.surface)
        self._browser.asks.offer(profile)
        self._browser.asks.deliver(profile)

    def _controlling(self, connection: Connection, what: str) -> tuple[Profile, Viewer]:
        table = self._browser.table
        viewer = table.viewer_of(connection)
        if viewer is None:
            raise ClientRefusal(what, "this connection is not viewing a browser tab")
        if table.controller(viewer.surface) is not viewer:
            raise ClientRefusal(what, "only the tab's controller may do this; take control first")
        return self._browser.profiles[viewer.surface[0]], viewer

    async def nav(self, connection: Connection, message: BrowserNav) -> None:
        profile, viewer = self._controlling(connection, "browser_nav")
        nav = Nav(tab=viewer.surface[1], back=message.back)
        state = await self._browser.hosts.ask("browser_nav", profile, nav)
        self._browser.fanout.send_nav_state(profile, state)

    async def navigate(self, connection: Connection, message: BrowserNavigate) -> None:
        profile, viewer = self._controlling(connection, "browser_navigate")
        navigate = Navigate(tab=viewer.surface[1], url=message.url)
        await self._browser.hosts.ask("browser_navigate", profile, navigate)

    async def dialog_answer(self, connection: Connection, message: BrowserDialogAnswer) -> None:
        """The controller answers the tab's alert/confirm/prompt/beforeunload; the record keeps
        the answer's length only, never its characters (a prompt may ask for a password)."""
        what = "browser_dialog_answer"
        viewer = self._browser.table.viewer_of(connection)
        profile_key, tab = viewer.surface if viewer is not None else (None, None)
        try:
            profile, viewer = self._controlling(connection, what)
            text = message.prompt_text()
            answer = DialogAnswer(tab=viewer.surface[1], accept=message.accept, text=text)
            await self._browser.hosts.ask(what, profile, answer)
        except ClientRefusal as refusal:
            log.info(what, landed=False, profile=profile_key, tab=tab, why=refusal.why)
            if message.reply_to is None:
                raise
            connection.send(
                server.Reply(reply_to=message.reply_to, body=server.Refused(why=refusal.why))
            )
            return
        chars = None if text is None else len(text)
        fields = {"profile": profile_key, "tab": tab, "accept": message.accept, "chars": chars}
        log.info(what, landed=True, **fields)
        if message.reply_to is not None:
            connection.send(server.Reply(reply_to=message.reply_to, body=browser.Done()))
