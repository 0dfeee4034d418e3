"""The browser verbs on the socket, served over one browser host worker per profile.

The supervisor owns every client-facing fact (viewers, the controller role, seq windows, file
asks, download offers) in `RoleTable` and here; hosts are restartable executors that know tabs,
not viewers. A tab's frames arrive ready-made on the host's `tab:<n>` stream and are handed,
the same bytes, to each viewer's newest-wins queue (B06, B07): format 2 (JPEG) only to
connections that declared `formats=webp,jpeg`, which then skip the WebP motion frames; key
frames (format 1) to everyone (D3). A tab's sound (kind 2, the host's `audio` stream) goes to
each of its viewers that has not turned it off (`browser_audio`), through a bounded queue that
drops the oldest frames past ~200 ms waiting (newest wins); the sound server and the
profiles' sinks are `sound.SoundService`'s.

`install(supervisor, manager)` registers the verbs; `forge supervise` calls it with its worker
manager. Profiles come from forge.toml (project, else org, else `default`), keyed `<org>/<name>`.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from forge import paths
from forge.clock import epoch_ms
from forge.ipc import manager as ipc
from forge.ipc.manager import WorkerHandle, WorkerManager, WorkerRow, WorkerState
from forge.ipc.messages import StreamFrame
from forge.ipc.protocol import WorkerRequest
from forge.logs import get_logger
from forge.supervisor.browser.sound import SoundService
from forge.supervisor.browser.tabroles import RoleTable, Size, Surface, Verdict, Viewer, check_size
from forge.supervisor.service import WorkerService
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.outbound import AUDIO_LIMIT
from forge.supervisor.socket.seats import UnknownProject
from forge.wire import browser, server
from forge.wire.binary import BROWSER_AUDIO_HEADER, BROWSER_FRAME_HEADER, FORMAT_JPEG
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
    ReplyTo,
    is_discrete,
    record_fields,
)
from forge.wire.errors import ClientRefusal
from forge.wire.files import FileAnswerRefused, decode_file_answer
from forge.wire.seats import Seat
from forge.workers.browser.protocol import (
    AUDIO_STREAM,
    BROWSER,
    BrowserConfig,
    BrowserMissing,
    DialogAnswer,
    DownloadDone,
    FileAnswer,
    FileDialog,
    FileDialogGone,
    Input,
    Listen,
    Nav,
    Navigate,
    NavMoved,
    NavState,
    Open,
    Page,
    Resize,
    SoundServer,
    SoundTrouble,
    SurfaceFailed,
    TabRow,
    Tabs,
    TabsChanged,
    View,
    check_executable,
    sandbox_off,
    stream_tab,
)

log = get_logger(__name__)

ReplyT = TypeVar("ReplyT")
TabsShape = TypeVar("TabsShape", browser.TabsState, browser.BrowserTabs)

HOST_READY_S = 30.0
"""How long an attach waits for a profile's host to start (Chromium starts in ~0.5 s)."""
REQUEST_S = 15.0
"""The deadline of one host request (a navigation waits for the page to commit)."""
DOWNLOAD_BACKLOG = 8
"""O-BR9: offers waiting for a controller, per profile; past it the oldest is dropped."""
REFUSED_MOVE_EVERY_S = 1.0
"""O-BR3: a watcher's refused moves are answered at most once a second per connection."""


@dataclass
class _Ask:
    profile: str
    host_ask: int
    tab: int
    multiple: bool
    sent_to: int | None = None
    """The viewer id of the controller it went to (asked once per controller)."""


@dataclass
class _Profile:
    key: str
    wire_id: int
    generation: int = 0
    handle: WorkerHandle | None = None
    rows: list[TabRow] = field(default_factory=list)
    owners: dict[int, Seat] = field(default_factory=dict)
    kept: dict[int, bytes] = field(default_factory=dict)
    kept_webp: dict[int, bytes] = field(default_factory=dict)
    layout: dict[int, Size] = field(default_factory=dict)
    followers: set[Connection] = field(default_factory=set)
    offers: deque[browser.BrowserDownload] = field(default_factory=deque)
    lost: int = 0
    last_use: float = 0.0
    idle: asyncio.Task[None] | None = None
    starting: asyncio.Lock = field(default_factory=asyncio.Lock)
    failed_pid: int | None = None
    """The pid of a host whose Chromium failed: the next attach waits for its successor."""
    sound: bool = False
    """The running host was given a sink (sound is on here)."""
    sound_generation: int | None = None
    """The sound server run whose sink the host's Chromium plays into."""
    sound_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    sound_trouble: str | None = None
    """What the host said is wrong with its sound (the server went away), or None."""
    listened: set[int] = field(default_factory=set)
    """Tabs the host was told some viewer hears."""

    @property
    def up(self) -> bool:
        return self.handle is not None and self.handle.row.state is WorkerState.READY


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
        self.profiles: dict[str, _Profile] = {}
        self._wire_ids = itertools.count(1)
        self._ask_ids = itertools.count(1)
        self._asks: dict[int, _Ask] = {}
        self._seat_tabs: dict[Seat, Surface] = {}
        self._warming: dict[Hashable, NavState | None] = {}
        """Connections attached whose browser_view and nav state are not sent yet: no frames,
        and no nav state before the view; the newest move meanwhile is sent after it."""
        self._refused_move_at: dict[Hashable, float] = {}
        self._muted: set[Hashable] = set()
        """Connections that turned the sound off (`browser_audio{on: false}`)."""
        self.sandbox_off = sandbox_off(os.geteuid() if euid is None else euid)
        """Why every profile's Chromium runs unsandboxed (its rows and home say it); None when
        it runs sandboxed."""
        self.sound = SoundService(
            manager,
            enabled=supervisor.loaded.config.browser.audio,
            on_change=self._sound_changed,
        )

    def install(self) -> None:
        verbs: list[tuple[type[Any], Callable[[Connection, Any], Awaitable[None]]]] = [
            (BrowserView, self._view),
            (BrowserViewPage, self._view_page),
            (BrowserDetach, self._detach),
            (BrowserResize, self._resize),
            (BrowserInput, self._input),
            (BrowserControl, self._control),
            (BrowserNav, self._nav),
            (BrowserNavigate, self._navigate),
            (BrowserDialogAnswer, self._dialog_answer),
            (BrowserFileAnswer, self._file_answer),
            (BrowserTabs, self._tabs),
            (BrowserOpen, self._open),
            (BrowserAudio, self._audio_toggle),
        ]
        for message_type, handler in verbs:
            self.supervisor.register_verb(message_type, handler)
        self.supervisor.on_disconnect(self._disconnected)
        self.supervisor.home_fields["browser_sandbox_off"] = lambda: self.sandbox_off
        if self.sandbox_off is not None:
            log.warning("browser_sandbox_off", why=self.sandbox_off)
        super().install()

    # --- profiles and hosts ---------------------------------------------------------------

    def _profile_for(self, what: str, seat: Seat) -> _Profile:
        config = self.supervisor.loaded.config
        project = config.project(seat.org, seat.project)
        if project is None:
            raise ClientRefusal(what, f"no project {seat.org}/{seat.project} is configured", seat)
        key = f"{seat.org}/{config.browser_profile_for(project)}"
        profile = self.profiles.get(key)
        if profile is None:
            profile = self.profiles[key] = _Profile(key, next(self._wire_ids))
        return profile

    async def _host(self, what: str, seat: Seat) -> _Profile:
        """The seat's profile with its host up, started on first use (O-BR5)."""
        try:
            await self.supervisor.start_seat(seat)
        except UnknownProject as unknown:
            raise ClientRefusal(what, str(unknown), seat) from None
        profile = self._profile_for(what, seat)
        async with profile.starting:
            started = profile.handle is None or profile.handle.row.state in {
                WorkerState.STOPPED,
                WorkerState.FAILED,
            }
            if started:
                await self._make_sink(profile)
                self._start_host(what, seat, profile)
            assert profile.handle is not None
            failed_pid = profile.failed_pid

            def settled(row: WorkerRow) -> bool:
                fresh = failed_pid is None or row.pid not in {failed_pid, None}
                return row.state is WorkerState.FAILED or (row.state is WorkerState.READY and fresh)

            row = await profile.handle.wait_for(settled, within=HOST_READY_S)
            profile.failed_pid = None
        if row.state is WorkerState.FAILED:
            raise ClientRefusal(what, f"the browser host failed: {row.last_reason}", seat)
        self._touch(profile)
        if started:
            self._push_tabs(profile)  # its rows arrived before it was up
        return profile

    def _start_host(self, what: str, seat: Seat, profile: _Profile) -> None:
        settings = self.supervisor.loaded.config.browser
        try:
            check_executable(settings.chromium_path)
        except BrowserMissing as missing:
            raise ClientRefusal(what, str(missing), seat) from None
        profile.generation += 1
        org, _, name = profile.key.partition("/")
        config = BrowserConfig(
            profile_id=profile.wire_id,
            profile_key=profile.key,
            profile_dir=str(paths.browser_profile_dir(profile.key)),
            executable=str(settings.chromium_path),
            home_url=settings.home_url,
            audio=self.sound.route(profile.key),
        )
        profile.sound = config.audio is not None
        profile.sound_trouble = None
        profile.listened.clear()
        spec = BROWSER.spec(
            f"browser-{org}-{name}-{profile.generation}", config=msgspec.to_builtins(config)
        )
        handle = self.manager.start(spec)
        profile.handle = handle
        handle.subscribe(
            None, lambda f: self._frame(profile, f), lambda s, r: self._end(profile, s, r)
        )
        handle.on_event(lambda e: self._event(profile, e))
        log.info("browser_host_starting", profile=profile.key, worker=spec.name)

    async def _ask(self, what: str, profile: _Profile, request: WorkerRequest[ReplyT]) -> ReplyT:
        """One host request; its refusal is the verb's, in the host's words."""
        if profile.handle is None:
            raise ClientRefusal(what, f"the browser of {profile.key} is not running")
        answer = await self.ask(profile.handle, request, what=what, within=REQUEST_S)
        self._touch(profile)
        return answer

    # --- the idle clock (O-BR13) ----------------------------------------------------------

    def _touch(self, profile: _Profile) -> None:
        profile.last_use = self.clock.monotonic()
        if profile.idle is None or profile.idle.done():
            profile.idle = self.tasks.spawn(self._idle_close(profile))

    def _closing_at_ms(self, profile: _Profile) -> int | None:
        if not profile.up:
            return None
        idle_s = self.supervisor.loaded.config.browser.idle_close_s
        viewed = bool(self.table.surfaces(profile.key))
        since = 0.0 if viewed else self.clock.monotonic() - profile.last_use
        return epoch_ms(self.clock) + int((idle_s - since) * 1000)

    async def _idle_close(self, profile: _Profile) -> None:
        idle_s = self.supervisor.loaded.config.browser.idle_close_s
        while profile.up:
            if self.table.surfaces(profile.key):
                profile.last_use = self.clock.monotonic()
            left = profile.last_use + idle_s - self.clock.monotonic()
            if left <= 0:
                break
            await self.clock.sleep(left)
        if profile.handle is not None and profile.up:
            log.info("browser_host_idle_closed", profile=profile.key, idle_s=idle_s)
            await profile.handle.stop()
            self._host_gone(profile)
            self._push_tabs(profile)

    # --- frames and events from hosts -----------------------------------------------------

    def _frame(self, profile: _Profile, frame: StreamFrame) -> None:
        if frame.stream_id == AUDIO_STREAM:
            self._audio(profile, bytes(frame.payload))
            return
        data = bytes(frame.payload)
        _, wire_id, tab, _, _, _, image_format, key, _, _ = BROWSER_FRAME_HEADER.unpack_from(data)
        profile.kept[tab] = data
        if image_format != FORMAT_JPEG:
            profile.kept_webp[tab] = data
        for viewer in self.table.viewers((profile.key, tab)):
            if viewer.connection in self._warming:
                continue
            if image_format == FORMAT_JPEG and not viewer.jpeg:
                continue
            if image_format != FORMAT_JPEG and not key and viewer.jpeg:
                continue
            _connection(viewer).send_latest((wire_id, tab), data)

    def _end(self, profile: _Profile, stream: str, reason: str) -> None:
        """A tab stream ended: its host stopped, crashed, or its Chromium died (its words)."""
        if stream == AUDIO_STREAM:
            return  # the tabs' own streams say what happened to them
        tab = stream_tab(stream)
        if reason == "worker_stopped":
            self._surface_failed(profile, [tab], reason)
            return
        self._host_failing(profile)
        viewed = {surface[1] for surface in self.table.surfaces(profile.key)}
        self._surface_failed(profile, sorted(viewed | {tab}), reason)
        self._host_gone(profile)

    def _host_failing(self, profile: _Profile) -> None:
        """The host is going down and the lifecycle restarts it: attaches wait for the new one.
        (Its stream ends and its `surface_failed` event ride different channels, either first.)"""
        if profile.handle is not None and profile.failed_pid is None:
            profile.failed_pid = profile.handle.row.pid

    def _event(self, profile: _Profile, event: ipc.WorkerEvent) -> None:
        match BROWSER.decode_event(event.event, event.data):
            case TabsChanged(rows=rows):
                self._rows_changed(profile, rows)
            case NavMoved(state=state):
                self._send_nav_state(profile, state)
            case FileDialog(ask=host_ask, tab=tab, multiple=multiple):
                self._asks[next(self._ask_ids)] = _Ask(profile.key, host_ask, tab, multiple)
                self._offer_asks(profile)
            case FileDialogGone(ask=host_ask):
                for ask_id, ask in list(self._asks.items()):
                    if ask.profile == profile.key and ask.host_ask == host_ask:
                        del self._asks[ask_id]
            case DownloadDone() as done:
                self._download(profile, done, event.payloads)
            case SoundTrouble(why=why):
                profile.sound_trouble = why
                self._push_tabs(profile)
            case SurfaceFailed(reason=reason, tabs=tabs):
                self._host_failing(profile)
                self._surface_failed(profile, tabs, reason)
                self._host_gone(profile)

    def _rows_changed(self, profile: _Profile, rows: list[TabRow]) -> None:
        profile.rows = rows
        open_now = {row.number for row in rows}
        gone = [s[1] for s in self.table.surfaces(profile.key) if s[1] not in open_now]
        if gone:
            self._surface_failed(profile, gone, "the tab closed")
        self._push_tabs(profile)

    def _surface_failed(self, profile: _Profile, tabs: list[int], reason: str) -> None:
        """BR21: said out loud to every viewer of those tabs, who are then detached."""
        for tab in tabs:
            for viewer in self.table.viewers((profile.key, tab)):
                _connection(viewer).send(
                    browser.BrowserSurfaceFailed(id=profile.wire_id, tab=tab, reason=reason)
                )
                self.table.detach(viewer.connection)
            profile.kept.pop(tab, None)
            profile.kept_webp.pop(tab, None)
            profile.layout.pop(tab, None)

    def _host_gone(self, profile: _Profile) -> None:
        """The host restarts (or closed): numbers and asks of its tabs mean nothing any more."""
        profile.rows, profile.owners = [], {}
        profile.listened.clear()
        profile.kept.clear()
        profile.kept_webp.clear()
        profile.layout.clear()
        for ask_id, ask in list(self._asks.items()):
            if ask.profile == profile.key:
                del self._asks[ask_id]
        for seat, surface in list(self._seat_tabs.items()):
            if surface[0] == profile.key:
                del self._seat_tabs[seat]
        self.table.forget_profile(profile.key)

    def _send_nav_state(self, profile: _Profile, state: NavState) -> None:
        message = _nav_state(profile, state)
        for viewer in self.table.viewers((profile.key, state.tab)):
            if viewer.connection in self._warming:
                self._warming[viewer.connection] = state
            else:
                _connection(viewer).send(message)

    # --- tab rows (BR19, BR20) ------------------------------------------------------------

    def _tab_rows(self, profile: _Profile) -> list[browser.TabRow]:
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

    def _tabs_state(self, profile: _Profile, shape: type[TabsShape]) -> TabsShape:
        """The profile's browser now: pushed as `browser_tabs`, or a `reply_to` answer's body."""
        return shape(
            profile=profile.key,
            id=profile.wire_id,
            up=profile.up,
            closing_at_ms=self._closing_at_ms(profile),
            audio_off=self._audio_off(profile),
            sandbox_off=self.sandbox_off,
            rows=self._tab_rows(profile),
        )

    def _push_tabs(self, profile: _Profile) -> None:
        if not profile.followers:
            return
        frame = server.JsonFrame.encode(self._tabs_state(profile, browser.BrowserTabs))
        for connection in profile.followers:
            connection.send_frame(frame)

    async def _tabs(self, connection: Connection, message: BrowserTabs) -> None:
        try:
            profile = self._profile_for("browser_tabs", message.seat)
        except ClientRefusal as refusal:
            if message.reply_to is None:
                raise
            connection.send(
                server.Reply(reply_to=message.reply_to, body=server.Refused(why=refusal.why))
            )
            return
        profile.followers.add(connection)
        if message.reply_to is not None:
            body = browser.Tabs(tabs=self._tabs_state(profile, browser.TabsState))
            connection.send(server.Reply(reply_to=message.reply_to, body=body))

    # --- attach, detach (BR01-BR07) -------------------------------------------------------

    async def _view(self, connection: Connection, message: BrowserView) -> None:
        async def resolve(profile: _Profile) -> int:
            if message.tab is not None:
                return message.tab
            current = self._seat_tabs.get(message.seat)
            if current is not None and current[0] == profile.key:
                return current[1]
            if not profile.rows:
                profile.rows = (await self._ask("browser_view", profile, Tabs())).rows
            if not profile.rows:
                raise ClientRefusal("browser_view", "the browser has no tab open", message.seat)
            return min(row.number for row in profile.rows)

        await self._attach(connection, "browser_view", message.seat, message.reply_to, resolve)

    async def _view_page(self, connection: Connection, message: BrowserViewPage) -> None:
        async def resolve(profile: _Profile) -> int:
            try:
                found = await self._ask("browser_view_page", profile, Page(target=message.target))
            except ClientRefusal as refusal:
                raise _PageGone(refusal.why, message.target, self._tab_rows(profile)) from None
            return found.tab

        await self._attach(connection, "browser_view_page", message.seat, message.reply_to, resolve)

    async def _attach(
        self,
        connection: Connection,
        what: str,
        seat: Seat,
        reply_to: ReplyTo | None,
        resolve: Callable[[_Profile], Awaitable[int]],
    ) -> None:
        asked: int | None = None
        try:
            profile = await self._host(what, seat)
            asked = await resolve(profile)
            rows = (await self._ask(what, profile, Tabs())).rows
            if asked not in {row.number for row in rows}:
                open_now = ", ".join(str(row.number) for row in rows) or "none"
                raise ClientRefusal(what, f"tab {asked} is not open (open tabs: {open_now})", seat)
        except ClientRefusal as refusal:
            self._refuse_attach(connection, what, asked, refusal, reply_to)
            return
        surface = (profile.key, asked)
        attached = self.table.attach(connection, surface, jpeg="jpeg" in connection.formats)
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
            await self._surface_changed(attached.left, released_by=attached.released)
        self._seat_tabs[seat] = surface
        self._warming[connection] = None
        try:
            webp, jpeg = self.table.formats(surface)
            nav = await self._ask(what, profile, View(tab=asked, webp=webp, jpeg=jpeg))
            self._warming[connection] = None  # the answer is newer than any move before it
            await self._apply_layout(profile, surface)
            await self._fit_listening(what, profile, surface)
        except ClientRefusal as refusal:
            self._warming.pop(connection, None)
            self.table.detach(connection)
            self._refuse_attach(connection, what, asked, refusal, reply_to)
            return
        except BaseException:  # the connection went away meanwhile
            self._warming.pop(connection, None)
            raise
        if reply_to is not None:
            connection.send(
                server.Reply(
                    reply_to=reply_to, body=browser.Attached(profile=profile.key, tab=asked)
                )
            )
        self._push_view(profile, surface)
        connection.send(_nav_state(profile, self._warming.pop(connection, None) or nav))
        kept = (profile.kept if viewer.jpeg else profile.kept_webp).get(asked)
        if kept is not None:
            connection.send_latest((profile.wire_id, asked), kept)
        self._offer_asks(profile)

    def _refuse_attach(
        self,
        connection: Connection,
        what: str,
        asked: int | None,
        refusal: ClientRefusal,
        reply_to: ReplyTo | None,
    ) -> None:
        """BR04: a refused attach drops what the connection viewed, and says why."""
        left = self.table.viewer_of(connection)
        left_surface = left.surface if left is not None else None
        if left_surface is not None:
            released = self.table.detach(connection)
            self.tasks.spawn(self._surface_changed(left_surface, released_by=released))
        log.info(
            "browser_attach_refused",
            tab=asked,
            left_profile=left_surface[0] if left_surface else None,
            left_tab=left_surface[1] if left_surface else None,
            why=refusal.why,
        )
        if reply_to is not None:
            body = (
                refusal.body if isinstance(refusal, _PageGone) else server.Refused(why=refusal.why)
            )
            connection.send(server.Reply(reply_to=reply_to, body=body))
        else:
            connection.send(server.Error(what=what, why=refusal.why, seat=refusal.seat))

    async def _detach(self, connection: Connection, message: BrowserDetach) -> None:
        viewer = self.table.viewer_of(connection)
        if viewer is None:
            return
        released = self.table.detach(connection)
        await self._surface_changed(viewer.surface, released_by=released)

    def _disconnected(self, connection: Connection) -> None:
        for profile in self.profiles.values():
            profile.followers.discard(connection)
        self._refused_move_at.pop(connection, None)
        self._muted.discard(connection)
        viewer = self.table.viewer_of(connection)
        if viewer is not None:
            released = self.table.detach(connection)
            self.tasks.spawn(self._surface_changed(viewer.surface, released_by=released))

    async def _surface_changed(self, surface: Surface, *, released_by: bool) -> None:
        """A viewer left `surface`: tell the others, and fit the host's work to who is left."""
        profile = self.profiles[surface[0]]
        if released_by:
            log.info("browser_role_released", profile=surface[0], tab=surface[1])
        self._push_view(profile, surface)
        self._touch(profile)
        self._push_tabs(profile)  # BR06: the idle deadline moved (`closing_at_ms`)
        if not profile.up:
            return
        webp, jpeg = self.table.formats(surface)
        try:
            await self._ask("browser_detach", profile, View(tab=surface[1], webp=webp, jpeg=jpeg))
            await self._apply_layout(profile, surface)
            await self._fit_listening("browser_detach", profile, surface)
        except ClientRefusal as refusal:
            log.debug("browser_view_update_failed", profile=surface[0], why=refusal.why)

    def _push_view(self, profile: _Profile, surface: Surface) -> None:
        """BR07: every viewer of the tab draws the same truth about who drives."""
        for viewer in self.table.viewers(surface):
            _connection(viewer).send(self.table.view_state(viewer, profile.wire_id))

    # --- layout (BR08) --------------------------------------------------------------------

    async def _resize(self, connection: Connection, message: BrowserResize) -> None:
        size = Size(message.width, message.height, message.scale)
        wrong = check_size(size)
        if wrong is not None:
            raise ClientRefusal("browser_resize", wrong)
        viewer = self.table.viewer_of(connection)
        if viewer is None:
            raise ClientRefusal("browser_resize", "this connection is not viewing a browser tab")
        viewer.size = size
        await self._apply_layout(self.profiles[viewer.surface[0]], viewer.surface)

    async def _apply_layout(self, profile: _Profile, surface: Surface) -> None:
        """Give the tab its layout owner's size; a size already in place asks nothing."""
        size = self.table.layout(surface)
        if size is None or profile.layout.get(surface[1]) == size:
            return
        profile.layout[surface[1]] = size
        resize = Resize(tab=surface[1], width=size.width, height=size.height, scale=size.scale)
        await self._ask("browser_resize", profile, resize)

    # --- sound (kind 2) -------------------------------------------------------------------

    async def _make_sink(self, profile: _Profile) -> None:
        """Before a host starts: its sink on the sound server, so Chromium finds it at once."""
        async with profile.sound_lock:
            profile.sound_generation = await self.sound.sink(profile.key)

    def _sound_changed(self) -> None:
        """The sound server's row moved: rows say so; a new run gets every live sink again."""
        for profile in self.profiles.values():
            self._push_tabs(profile)
        generation = self.sound.generation
        if generation is not None:
            self.tasks.spawn(self._resync_sound(generation))

    async def _resync_sound(self, generation: int) -> None:
        """A new server run has no sinks: make each running host's and let its Chromium
        reconnect (it does not on its own)."""
        for profile in list(self.profiles.values()):
            async with profile.sound_lock:
                handle = profile.handle
                if not profile.sound or profile.sound_generation == generation or handle is None:
                    continue
                if handle.row.state in {WorkerState.STOPPED, WorkerState.FAILED}:
                    continue
                made = await self.sound.sink(profile.key)
                if made is None:
                    continue
                told = await self.tell(
                    handle,
                    SoundServer(),
                    "browser_sound_reconnect_failed",
                    within=REQUEST_S,
                    profile=profile.key,
                )
                if not told:
                    continue
                profile.sound_generation = made
                log.info("browser_sound_reconnected", profile=profile.key, generation=made)
            self._push_tabs(profile)

    def _audio_off(self, profile: _Profile) -> str | None:
        """The one line a profile's row shows while its sound cannot reach viewers."""
        trouble = self.sound.trouble()
        if trouble is not None or not profile.up:
            return trouble
        if profile.sound and profile.sound_generation != self.sound.generation:
            return "the sound server restarted; this browser is reconnecting to it"
        return profile.sound_trouble

    def _audio(self, profile: _Profile, data: bytes) -> None:
        """One kind-2 frame to each viewer of its tab that hears it; a viewer keeps at most
        ~200 ms waiting, the oldest frames dropped past it (newest wins, never a growing queue)."""
        tab = BROWSER_AUDIO_HEADER.unpack_from(data)[2]
        stream = ("audio", profile.wire_id, tab)
        for viewer in self.table.viewers((profile.key, tab)):
            if viewer.connection in self._warming or viewer.connection in self._muted:
                continue
            _connection(viewer).send_recent(stream, data, limit=AUDIO_LIMIT)

    async def _fit_listening(self, what: str, profile: _Profile, surface: Surface) -> None:
        """Tell the host whether anyone viewing the tab hears it (it reads sound only then)."""
        tab = surface[1]
        wanted = any(v.connection not in self._muted for v in self.table.viewers(surface))
        if not profile.sound or not profile.up:
            return
        generation = self.sound.generation
        if wanted and generation is not None and profile.sound_generation != generation:
            self.tasks.spawn(self._resync_sound(generation))  # its sink was not made: try again
        if wanted == (tab in profile.listened):
            return
        if wanted:
            profile.listened.add(tab)
        else:
            profile.listened.discard(tab)
        try:
            await self._ask(what, profile, Listen(tab=tab, on=wanted))
        except ClientRefusal as refusal:
            log.debug("browser_listen_failed", profile=profile.key, tab=tab, why=refusal.why)

    async def _audio_toggle(self, connection: Connection, message: BrowserAudio) -> None:
        """Our addition: this connection hears the tabs it views (the default), or not."""
        if message.on:
            self._muted.discard(connection)
        else:
            self._muted.add(connection)
        viewer = self.table.viewer_of(connection)
        surface = viewer.surface if viewer is not None else None
        log.info(
            "browser_audio",
            on=message.on,
            profile=surface[0] if surface else None,
            tab=surface[1] if surface else None,
        )
        if surface is not None:
            await self._fit_listening("browser_audio", self.profiles[surface[0]], surface)
        if message.reply_to is not None:
            connection.send(server.Reply(reply_to=message.reply_to, body=browser.Done()))

    # --- input, control, history (BR09-BR16) ----------------------------------------------

    async def _input(self, connection: Connection, message: BrowserInput) -> None:
        gesture = message.gesture()
        verdict = self.table.input(connection, message.seq)
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
            now = self.clock.monotonic()
            if now - self._refused_move_at.get(connection, -REFUSED_MOVE_EVERY_S) >= (
                REFUSED_MOVE_EVERY_S
            ):
                self._refused_move_at[connection] = now
                raise ClientRefusal("browser_input", why)
            return
        viewer = self.table.viewer_of(connection)
        assert viewer is not None
        profile = self.profiles[viewer.surface[0]]
        await self._ask("browser_input", profile, Input(tab=viewer.surface[1], event=message.event))

    async def _control(self, connection: Connection, message: BrowserControl) -> None:
        viewer = self.table.viewer_of(connection)
        if not message.take:
            if viewer is not None and self.table.release(connection):
                profile = self.profiles[viewer.surface[0]]
                log.info("browser_role_released", profile=profile.key, tab=viewer.surface[1])
                self._push_view(profile, viewer.surface)
                await self._apply_layout(profile, viewer.surface)
            return
        if viewer is None:
            reason = "this connection is not viewing a browser tab"
            has_browser = any(p.up for p in self.profiles.values())
            log.info(
                "browser_control_unattached", take=True, has_browser=has_browser, reason=reason
            )
            raise ClientRefusal("browser_control", reason)
        profile = self.profiles[viewer.surface[0]]
        open_now = {row.number for row in profile.rows}
        if not profile.up or viewer.surface[1] not in open_now:
            log.info("browser_control", landed=False, profile=profile.key, tab=viewer.surface[1])
            raise ClientRefusal("browser_control", f"tab {viewer.surface[1]} is no longer open")
        self.table.take(connection)
        log.info("browser_control", landed=True, profile=profile.key, tab=viewer.surface[1])
        self._push_view(profile, viewer.surface)
        await self._apply_layout(profile, viewer.surface)
        self._offer_asks(profile)
        self._deliver_offers(profile)

    def _controlling(self, connection: Connection, what: str) -> tuple[_Profile, Viewer]:
        viewer = self.table.viewer_of(connection)
        if viewer is None:
            raise ClientRefusal(what, "this connection is not viewing a browser tab")
        if self.table.controller(viewer.surface) is not viewer:
            raise ClientRefusal(what, "only the tab's controller may do this; take control first")
        return self.profiles[viewer.surface[0]], viewer

    async def _nav(self, connection: Connection, message: BrowserNav) -> None:
        profile, viewer = self._controlling(connection, "browser_nav")
        state = await self._ask(
            "browser_nav", profile, Nav(tab=viewer.surface[1], back=message.back)
        )
        self._send_nav_state(profile, state)

    async def _navigate(self, connection: Connection, message: BrowserNavigate) -> None:
        profile, viewer = self._controlling(connection, "browser_navigate")
        navigate = Navigate(tab=viewer.surface[1], url=message.url)
        await self._ask("browser_navigate", profile, navigate)

    async def _dialog_answer(self, connection: Connection, message: BrowserDialogAnswer) -> None:
        """The controller answers the tab's alert/confirm/prompt/beforeunload; the record keeps
        the answer's length only, never its characters (a prompt may ask for a password)."""
        what = "browser_dialog_answer"
        viewer = self.table.viewer_of(connection)
        profile_key, tab = viewer.surface if viewer is not None else (None, None)
        try:
            profile, viewer = self._controlling(connection, what)
            text = message.prompt_text()
            answer = DialogAnswer(tab=viewer.surface[1], accept=message.accept, text=text)
            await self._ask(what, profile, answer)
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

    async def _open(self, connection: Connection, message: BrowserOpen) -> None:
        try:
            profile = await self._host("browser_open", message.seat)
            opened = await self._ask("browser_open", profile, Open(url=message.url))
        except ClientRefusal as refusal:
            connection.send(
                server.Reply(reply_to=message.reply_to, body=server.Refused(why=refusal.why))
            )
            return
        tab = opened.tab
        profile.owners[tab] = message.seat
        self._seat_tabs[message.seat] = (profile.key, tab)
        connection.send(server.Reply(reply_to=message.reply_to, body=browser.Opened(tab=tab)))
        self._push_tabs(profile)

    # --- file choosers (BR17, BR18, O-BR10) -----------------------------------------------

    def _offer_asks(self, profile: _Profile) -> None:
        """Each outstanding ask goes to its tab's controller, once per controller."""
        for ask_id, ask in self._asks.items():
            if ask.profile != profile.key:
                continue
            controller = self.table.controller((profile.key, ask.tab))
            if controller is None or ask.sent_to == controller.id:
                continue
            ask.sent_to = controller.id
            _connection(controller).send(
                browser.BrowserFileDialog(id=ask_id, tab=ask.tab, multiple=ask.multiple)
            )

    async def _file_answer(self, connection: Connection, message: BrowserFileAnswer) -> None:
        what = "browser_file_answer"
        ask = self._asks.get(message.id)
        viewer = self.table.viewer_of(connection)
        if ask is None:
            raise ClientRefusal(what, f"no file chooser is waiting under id {message.id}")
        if viewer is None or self.table.controller((ask.profile, ask.tab)) is not viewer:
            raise ClientRefusal(what, "only the controller of the asking tab may answer")
        try:
            files = decode_file_answer([{"name": f.name, "data": f.data} for f in message.files])
        except FileAnswerRefused as refused:
            raise ClientRefusal(what, str(refused)) from None
        del self._asks[message.id]
        profile = self.profiles[ask.profile]
        chosen = files or []
        if profile.handle is None:
            raise ClientRefusal(what, "the browser host is not running")
        answer = FileAnswer(ask=ask.host_ask, names=[f.name for f in chosen])
        payloads = tuple(f.data for f in chosen)
        await self.ask_raw(profile.handle, answer, what=what, payloads=payloads, within=REQUEST_S)

    # --- downloads (BR22, O-BR9) ----------------------------------------------------------

    def _download(
        self, profile: _Profile, done: DownloadDone, payloads: tuple[memoryview, ...]
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
        self._deliver_offers(profile)

    def _deliver_offers(self, profile: _Profile) -> None:
        """Each offer to its tab's controller (then forgotten); a loss notice to any controller."""
        waiting: deque[browser.BrowserDownload] = deque()
        for offer in profile.offers:
            tab = offer.tab if isinstance(offer.tab, int) else None
            controller = None if tab is None else self.table.controller((profile.key, tab))
            if controller is None:
                waiting.append(offer)
            else:
                _connection(controller).send(offer)
        profile.offers = waiting
        if profile.lost:
            surfaces = sorted(self.table.surfaces(profile.key))
            controllers = [self.table.controller(s) for s in surfaces]
            holder = next((c for c in controllers if c is not None), None)
            if holder is not None:
                _connection(holder).send(browser.BrowserDownload.loss(profile.lost))
                profile.lost = 0


class _PageGone(ClientRefusal):
    """O-BR4: a page id no tab carries; the refusal lists the tabs open now."""

    def __init__(self, why: str, target: str, rows: list[browser.TabRow]) -> None:
        super().__init__("browser_view_page", why)
        self.body = browser.PageGone(why=why, target=target, tabs=rows)


def _nav_state(profile: _Profile, state: NavState) -> browser.BrowserNavState:
    """BR16: the host's answer as the profile's viewers read it."""
    return browser.BrowserNavState(
        id=profile.wire_id, tab=state.tab, can_back=state.can_back, can_forward=state.can_forward
    )


def _connection(viewer: Viewer) -> Connection:
    connection = viewer.connection
    assert isinstance(connection, Connection)
    return connection


def install(supervisor: Supervisor, manager: WorkerManager) -> BrowserService:
    """Serve the browser verbs on `supervisor`, starting hosts through `manager`."""
    service = BrowserService(supervisor, manager)
    service.install()
    return service
