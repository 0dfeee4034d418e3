"""A tab's sound to its viewers: the host's `audio` stream, the profile's sink, who hears it.

A tab's sound (kind 2, the host's `audio` stream) goes to each of its viewers that has not turned
it off (`browser_audio`), through a bounded queue that drops the oldest frames past ~200 ms
waiting (newest wins). A host reads a tab's sound only while some viewer of it hears it
(`fit_listening`). The sound server and the profiles' sinks are `sound.SoundService`'s: a sink is
made before a host starts, and after the server restarts every live host's sink is made again and
its Chromium told to reconnect (`resync`). A profile's row says why its sound cannot reach viewers
(`audio_off`).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from forge.ipc.manager import WorkerState
from forge.logs import get_logger
from forge.supervisor.browser.fanout import connection_of
from forge.supervisor.browser.hosts import REQUEST_S, Profile
from forge.supervisor.browser.tabroles import Surface
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.outbound import AUDIO_LIMIT
from forge.wire import browser, server
from forge.wire.binary import BROWSER_AUDIO_HEADER
from forge.wire.client import BrowserAudio
from forge.wire.errors import ClientRefusal
from forge.workers.browser.protocol import Listen, SoundServer

if TYPE_CHECKING:
    from forge.supervisor.browser.service import BrowserService

log = get_logger(__name__)


class TabSound:
    """Each profile's sink and each tab's listeners."""

    def __init__(self, browser: BrowserService) -> None:
        self._browser = browser
        self.muted: set[Hashable] = set()
        """Connections that turned the sound off (`browser_audio{on: false}`)."""

    async def make_sink(self, profile: Profile) -> None:
        """Before a host starts: its sink on the sound server, so Chromium finds it at once."""
        async with profile.sound_lock:
            profile.sound_generation = await self._browser.sound.sink(profile.key)

    def sound_changed(self) -> None:
        """The sound server's row moved: rows say so; a new run gets every live sink again."""
        for profile in self._browser.profiles.values():
            self._browser.tabs.push(profile)
        generation = self._browser.sound.generation
        if generation is not None:
            self._browser.tasks.spawn(self._resync(generation))

    async def _resync(self, generation: int) -> None:
        """A new server run has no sinks: make each running host's and let its Chromium
        reconnect (it does not on its own)."""
        for profile in list(self._browser.profiles.values()):
            async with profile.sound_lock:
                handle = profile.handle
                if not profile.sound or profile.sound_generation == generation or handle is None:
                    continue
                if handle.row.state in {WorkerState.STOPPED, WorkerState.FAILED}:
                    continue
                made = await self._browser.sound.sink(profile.key)
                if made is None:
                    continue
                told = await self._browser.tell(
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
            self._browser.tabs.push(profile)

    def audio_off(self, profile: Profile) -> str | None:
        """The one line a profile's row shows while its sound cannot reach viewers."""
        sound = self._browser.sound
        trouble = sound.trouble()
        if trouble is not None or not profile.up:
            return trouble
        if profile.sound and profile.sound_generation != sound.generation:
            return "the sound server restarted; this browser is reconnecting to it"
        return profile.sound_trouble

    def frame(self, profile: Profile, data: bytes) -> None:
        """One kind-2 frame to each viewer of its tab that hears it; a viewer keeps at most
        ~200 ms waiting, the oldest frames dropped past it (newest wins, never a growing queue)."""
        tab = BROWSER_AUDIO_HEADER.unpack_from(data)[2]
        stream = ("audio", profile.wire_id, tab)
        warming = self._browser.views.warming
        for viewer in self._browser.table.viewers((profile.key, tab)):
            if viewer.connection in warming or viewer.connection in self.muted:
                continue
            connection_of(viewer).send_recent(stream, data, limit=AUDIO_LIMIT)

    async def fit_listening(self, what: str, profile: Profile, surface: Surface) -> None:
        """Tell the host whether anyone viewing the tab hears it (it reads sound only then)."""
        tab = surface[1]
        viewers = self._browser.table.viewers(surface)
        wanted = any(v.connection not in self.muted for v in viewers)
        if not profile.sound or not profile.up:
            return
        generation = self._browser.sound.generation
        if wanted and generation is not None and profile.sound_generation != generation:
            self._browser.tasks.spawn(self._resync(generation))  # its sink was not made: again
        if wanted == (tab in profile.listened):
            return
        if wanted:
            profile.listened.add(tab)
        else:
            profile.listened.discard(tab)
        try:
            await self._browser.hosts.ask(what, profile, Listen(tab=tab, on=wanted))
        except ClientRefusal as refusal:
            log.debug("browser_listen_failed", profile=profile.key, tab=tab, why=refusal.why)

    async def toggle(self, connection: Connection, message: BrowserAudio) -> None:
        """Our addition: this connection hears the tabs it views (the default), or not."""
        if message.on:
            self.muted.discard(connection)
        else:
            self.muted.add(connection)
        viewer = self._browser.table.viewer_of(connection)
        surface = viewer.surface if viewer is not None else None
        log.info(
            "browser_audio",
            on=message.on,
            profile=surface[0] if surface else None,
            tab=surface[1] if surface else None,
        )
        if surface is not None:
            profile = self._browser.profiles[surface[0]]
            await self.fit_listening("browser_audio", profile, surface)
        if message.reply_to is not None:
            connection.send(server.Reply(reply_to=message.reply_to, body=browser.Done()))
