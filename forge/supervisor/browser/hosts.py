"""A profile's browser host: started on first use (O-BR5), asked, and closed when idle (O-BR13).

A profile (`<org>/<name>`: the project's, else the org's, else `default`) has at most one host at
a time, a `forge.workers.browser` worker with its own Chromium; `Profile` is what the supervisor
keeps of it across the host's restarts: its tab rows, the tabs' owners, their newest frames, who
follows its row, its download offers and the state of its sound. When the host goes (a crash, an
idle close), everything numbered by its tabs is forgotten (`gone`).
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import msgspec

from forge import paths
from forge.clock import epoch_ms
from forge.ipc.manager import WorkerHandle, WorkerRow, WorkerState
from forge.ipc.protocol import WorkerRequest
from forge.logs import get_logger
from forge.supervisor.browser.tabroles import Size
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.seats import UnknownProject
from forge.wire import browser
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat
from forge.workers.browser.protocol import (
    BROWSER,
    BrowserConfig,
    BrowserMissing,
    TabRow,
    check_executable,
)

if TYPE_CHECKING:
    from forge.supervisor.browser.service import BrowserService

log = get_logger(__name__)

ReplyT = TypeVar("ReplyT")

HOST_READY_S = 30.0
"""How long an attach waits for a profile's host to start (Chromium starts in ~0.5 s)."""
REQUEST_S = 15.0
"""The deadline of one host request (a navigation waits for the page to commit)."""


@dataclass
class Profile:
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


class Hosts:
    """The profiles and their hosts: start, ask, idle close, and what a host's end forgets."""

    def __init__(self, browser: BrowserService) -> None:
        self._browser = browser
        self._wire_ids = itertools.count(1)

    def profile_for(self, what: str, seat: Seat) -> Profile:
        config = self._browser.supervisor.loaded.config
        project = config.project(seat.org, seat.project)
        if project is None:
            raise ClientRefusal(what, f"no project {seat.org}/{seat.project} is configured", seat)
        key = f"{seat.org}/{config.browser_profile_for(project)}"
        profile = self._browser.profiles.get(key)
        if profile is None:
            profile = self._browser.profiles[key] = Profile(key, next(self._wire_ids))
        return profile

    async def host(self, what: str, seat: Seat) -> Profile:
        """The seat's profile with its host up, started on first use (O-BR5)."""
        try:
            await self._browser.supervisor.start_seat(seat)
        except UnknownProject as unknown:
            raise ClientRefusal(what, str(unknown), seat) from None
        profile = self.profile_for(what, seat)
        async with profile.starting:
            started = profile.handle is None or profile.handle.row.state in {
                WorkerState.STOPPED,
                WorkerState.FAILED,
            }
            if started:
                await self._browser.hearing.make_sink(profile)
                self._start(what, seat, profile)
            assert profile.handle is not None
            failed_pid = profile.failed_pid

            def settled(row: WorkerRow) -> bool:
                fresh = failed_pid is None or row.pid not in {failed_pid, None}
                return row.state is WorkerState.FAILED or (row.state is WorkerState.READY and fresh)

            row = await profile.handle.wait_for(settled, within=HOST_READY_S)
            profile.failed_pid = None
        if row.state is WorkerState.FAILED:
            raise ClientRefusal(what, f"the browser host failed: {row.last_reason}", seat)
        self.touch(profile)
        if started:
            self._browser.tabs.push(profile)  # its rows arrived before it was up
        return profile

    def _start(self, what: str, seat: Seat, profile: Profile) -> None:
        settings = self._browser.supervisor.loaded.config.browser
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
            audio=self._browser.sound.route(profile.key),
        )
        profile.sound = config.audio is not None
        profile.sound_trouble = None
        profile.listened.clear()
        spec = BROWSER.spec(
            f"browser-{org}-{name}-{profile.generation}", config=msgspec.to_builtins(config)
        )
        handle = self._browser.manager.start(spec)
        profile.handle = handle
        fanout = self._browser.fanout
        handle.subscribe(
            None, lambda f: fanout.frame(profile, f), lambda s, r: fanout.end(profile, s, r)
        )
        handle.on_event(lambda e: fanout.event(profile, e))
        log.info("browser_host_starting", profile=profile.key, worker=spec.name)

    async def ask(self, what: str, profile: Profile, request: WorkerRequest[ReplyT]) -> ReplyT:
        """One host request; its refusal is the verb's, in the host's words."""
        if profile.handle is None:
            raise ClientRefusal(what, f"the browser of {profile.key} is not running")
        answer = await self._browser.ask(profile.handle, request, what=what, within=REQUEST_S)
        self.touch(profile)
        return answer

    # --- the idle clock (O-BR13) ----------------------------------------------------------

    def touch(self, profile: Profile) -> None:
        profile.last_use = self._browser.clock.monotonic()
        if profile.idle is None or profile.idle.done():
            profile.idle = self._browser.tasks.spawn(self._idle_close(profile))

    def closing_at_ms(self, profile: Profile) -> int | None:
        if not profile.up:
            return None
        clock = self._browser.clock
        idle_s = self._browser.supervisor.loaded.config.browser.idle_close_s
        viewed = bool(self._browser.table.surfaces(profile.key))
        since = 0.0 if viewed else clock.monotonic() - profile.last_use
        return epoch_ms(clock) + int((idle_s - since) * 1000)

    async def _idle_close(self, profile: Profile) -> None:
        clock = self._browser.clock
        idle_s = self._browser.supervisor.loaded.config.browser.idle_close_s
        while profile.up:
            if self._browser.table.surfaces(profile.key):
                profile.last_use = clock.monotonic()
            left = profile.last_use + idle_s - clock.monotonic()
            if left <= 0:
                break
            await clock.sleep(left)
        if profile.handle is not None and profile.up:
            log.info("browser_host_idle_closed", profile=profile.key, idle_s=idle_s)
            await profile.handle.stop()
            self.gone(profile)
            self._browser.tabs.push(profile)

    # --- a host's end ---------------------------------------------------------------------

    def failing(self, profile: Profile) -> None:
        """The host is going down and the lifecycle restarts it: attaches wait for the new one.
        (Its stream ends and its `surface_failed` event ride different channels, either first.)"""
        if profile.handle is not None and profile.failed_pid is None:
            profile.failed_pid = profile.handle.row.pid

    def gone(self, profile: Profile) -> None:
        """The host restarts (or closed): numbers and asks of its tabs mean nothing any more."""
        profile.rows, profile.owners = [], {}
        profile.listened.clear()
        profile.kept.clear()
        profile.kept_webp.clear()
        profile.layout.clear()
        self._browser.asks.forget(profile.key)
        self._browser.tabs.forget(profile.key)
        self._browser.table.forget_profile(profile.key)
