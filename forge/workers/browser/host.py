"""One browser profile's host: a windowless Chromium, its tabs, and what viewers need of them.

The host knows tabs, not viewers: the supervisor owns connections, roles and seq windows, and
tells the host per tab which frame formats anyone is watching in (`view`). A tab with no viewers
runs no screencast. Everything the page does on its own (navigations, dialogs, file choosers,
downloads, new tabs, Chromium dying) comes back as a `HostEvent`; frames come back ready-made.

Every tab lives in its own window (`Target.createTarget` with `newWindow`), because a background
tab in a shared window paints nothing. Only `type == "page"` targets are tabs (Chromium 156 also
lists `browser_ui` targets). Input is sent without waiting on replies: `Input.dispatchMouseEvent`
does not answer while a dialog it opened is up. With a sound route, Chromium plays into the
profile's sink and `audio.ProfileSound` turns it into kind-2 frames for the tabs listened to.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from forge.clock import SYSTEM_CLOCK, Clock
from forge.errors import UserError
from forge.logs import get_logger
from forge.wire.browser import Dialog
from forge.wire.client import Gesture, Key, Move, Wheel
from forge.wire.files import ChosenFile, check_file_name, download_refusal
from forge.workers.browser.audio import ProfileSound
from forge.workers.browser.cdp import CdpEvent, JsonObject
from forge.workers.browser.chromium import ChromiumProcess, LaunchSettings
from forge.workers.browser.errors import BrowserGone, CdpCommandFailed
from forge.workers.browser.gestures import PointerStream, to_cdp
from forge.workers.browser.protocol import (
    DEFAULT_EXECUTABLE,
    AudioRoute,
    FileDialog,
    FileDialogGone,
    NavMoved,
    NavState,
    SoundTrouble,
    SurfaceFailed,
    TabRow,
    TabsChanged,
)
from forge.workers.browser.pump import FramePump, FrameSeq, FrameSink, PumpSettings

log = get_logger(__name__)

_DIALOG_KEYS = {"Enter": True, "Escape": False}
"""While a JavaScript dialog holds the tab, Enter accepts it and Escape dismisses it."""

NAV_STATE_TRIES = 10
NAV_STATE_RETRY_S = 0.1
"""History read mid-commit is refused; it is asked again this often, this many times."""

TITLE_POLL_S = 1.0
"""How often viewed profiles re-read tab titles (Chromium announces no script-set title)."""

MAX_SURFACE_PX = 8192
"""O-BR8's largest surface: the screencast is capped there once, so a resize never restarts it."""
SCREENCAST: JsonObject = {"format": "jpeg", "quality": 80, "maxWidth": MAX_SURFACE_PX,
                          "maxHeight": MAX_SURFACE_PX, "everyNthFrame": 1}  # fmt: skip
"""Every frame Chromium paints (a page that paints once must still send it), as JPEG q80."""

SOUND_DOMAINS = ("WebAudio.enable", "Media.enable")
"""Enabled on every tab of a profile with sound: they report which tabs play (`sound.py`)."""
SOUND_EVENTS = frozenset({
    "WebAudio.contextCreated", "WebAudio.contextChanged", "WebAudio.contextWillBeDestroyed",
    "Media.playerEventsAdded",
})  # fmt: skip

ABANDONED_CAPTURE_S = 5.0
"""How long a capture the pump gave up on keeps the tab's emulation lock while Chromium may
still finish it (and put back the device metrics it started under)."""
TAB_NUMBER_LIMIT = 0xFFFF
"""Tab numbers ride the kind-1 header as u16; per host run, from 1, never reused (O-B3)."""


class BrowserRequestRefused(UserError):
    """A host request that cannot be done as asked (a gone tab, a URL we do not open)."""


def check_url(url: str) -> str:
    """Only http, https and about:blank are opened (the browser issue, D5)."""
    if url == "about:blank":
        return url
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise BrowserRequestRefused(
            f"only http, https and about:blank pages open here, not {url!r}"
        )
    return url


@dataclass(frozen=True)
class Viewport:
    """A surface's size in device pixels and the ratio they draw at (`browser_resize`)."""

    width: int
    height: int
    scale: float = 1.0

    @property
    def css(self) -> tuple[int, int]:
        """O-BR8: the page's CSS viewport is width/scale x height/scale."""
        return max(1, round(self.width / self.scale)), max(1, round(self.height / self.scale))

    @property
    def touch(self) -> bool:
        """A phone-sized surface: presses become touches and the page lays out as mobile."""
        return self.scale >= 2 and self.css[0] <= 600

    def laid_out(self, reported: tuple[int, int]) -> tuple[int, int]:
        """The CSS size a screencast frame's metadata says its page was laid out at. Chromium
        sometimes reports an emulated phone's size in device pixels (390x619 at scale 3 comes
        as 1170x1857): read as CSS, a tap on the picture would land three times too far (off
        the page, lost). That size is this viewport's own layout."""
        css = self.css
        if self.scale != 1 and reported == (round(css[0] * self.scale), round(css[1] * self.scale)):
            return css
        return reported

    def device_metrics(self) -> JsonObject:
        """`Emulation.setDeviceMetricsOverride`'s parameters for this surface."""
        width, height = self.css
        return {"width": width, "height": height, "deviceScaleFactor": self.scale,
                "mobile": self.touch}  # fmt: skip


def frame_page_size(
    reported: tuple[int, int], current: Viewport, previous: Viewport | None
) -> tuple[int, int]:
    """The CSS size a frame was laid out at, read against the current viewport and the one
    before it: a frame painted while a resize was landing (a phone's layout as the tab turns
    desktop) may carry the old viewport's size in device pixels."""
    page_size = current.laid_out(reported)
    if page_size == reported and previous is not None:
        return previous.laid_out(reported)
    return page_size


@dataclass(frozen=True)
class Download:
    """A finished download: `data` when it may cross, else `error` in words (BR22)."""

    tab: int | None
    name: str
    data: bytes | None
    error: str | None


HostEvent = (
    TabsChanged | NavMoved | FileDialog | FileDialogGone | Download | SoundTrouble | SurfaceFailed
)
"""What the page does on its own; all but `Download` (whose bytes ride apart) cross as they are."""


@dataclass(frozen=True)
class HostSettings:
    profile_id: int
    """The wire id every kind-1 frame of this profile carries."""
    profile_dir: Path
    """Chromium's user data (sign-ins persist), chosen uploads and downloads, side by side."""
    executable: Path = DEFAULT_EXECUTABLE
    home_url: str = "about:blank"
    default_viewport: Viewport = Viewport(1280, 720, 1.0)
    pump: PumpSettings = field(default_factory=PumpSettings)
    audio: AudioRoute | None = None
    """The profile's sink; None: Chromium is launched without one and no sound is read."""


@dataclass
class _Tab:
    number: int
    target: str
    session: str
    title: str
    url: str
    opener: int | None
    viewport: Viewport
    previous_viewport: Viewport | None = None
    """The size before the last resize: frames painted before Chromium applied the new one
    still carry it."""
    dialog: Dialog | None = None
    pump: FramePump | None = None
    frame_seq: FrameSeq = field(default_factory=FrameSeq)
    """Outlives each pump: a re-attach numbers on from the last frame (O-B3, issue #13 item 4)."""
    pointer: PointerStream = field(default_factory=PointerStream)
    nav_state: NavState | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    emulation: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held by a capture and by a viewport change: `Page.captureScreenshot` puts back the device
    metrics it started under when it ends, so a size that lands during a capture is undone
    (a phone that sends its size as it attaches would get the desktop layout for good)."""

    def row(self) -> TabRow:
        return TabRow(self.number, self.target, self.title, self.url, self.opener, self.dialog)


@dataclass(frozen=True)
class _FileAsk:
    tab: int
    node: int
    multiple: bool


@dataclass
class _Download:
    tab: int | None
    name: str


class BrowserHost:
    """Chromium for one profile; requests are methods, what happens on its own is `on_event`."""

    def __init__(
        self,
        settings: HostSettings,
        on_event: Callable[[HostEvent], None],
        on_frame: FrameSink,
        clock: Clock = SYSTEM_CLOCK,
        on_audio: FrameSink | None = None,
    ) -> None:
        self.settings = settings
        self._on_event = on_event
        self._on_frame = on_frame
        self._clock = clock
        self._chromium: ChromiumProcess | None = None
        self.sound: ProfileSound | None = None
        if settings.audio is not None and on_audio is not None:
            self.sound = ProfileSound(
                settings.audio,
                settings.profile_id,
                on_audio,
                lambda why: on_event(SoundTrouble(why=why)),
                lambda: self._chromium.pid if self._chromium is not None else None,
            )
        self._tabs: dict[int, _Tab] = {}
        self._by_session: dict[str, _Tab] = {}
        self._numbers = itertools.count(1)
        self._asks: dict[int, _FileAsk] = {}
        self._ask_ids = itertools.count(1)
        self._downloads: dict[str, _Download] = {}
        self._tab_attached = asyncio.Event()
        self._background: set[asyncio.Task[Any]] = set()
        self._stopping = False
        self.failed: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        """Resolves with the reason when Chromium stops without being asked to."""

    @property
    def uploads_dir(self) -> Path:
        return self.settings.profile_dir / "uploads"

    @property
    def downloads_dir(self) -> Path:
        return self.settings.profile_dir / "downloads"

    async def start(self) -> None:
        """Launch Chromium at `home_url` (the boot tab) and follow its page targets."""
        audio = self.settings.audio
        launch = LaunchSettings(
            self.settings.executable,
            self.settings.profile_dir / "chromium",
            (check_url(self.settings.home_url),),
            {"PULSE_SERVER": audio.server, "PULSE_SINK": audio.sink} if audio else {},
        )
        for scratch in (self.uploads_dir, self.downloads_dir):
            shutil.rmtree(scratch, ignore_errors=True)  # a previous run's files do not linger
        self.downloads_dir.mkdir(parents=True, exist_ok=True)
        self._chromium = await ChromiumProcess.launch(launch, self._cdp_event, self._clock)
        self._chromium.exited.add_done_callback(self._chromium_exited)
        cdp = self._chromium.connection
        await cdp.call(
            "Browser.setDownloadBehavior",
            {
                "behavior": "allowAndName",
                "downloadPath": str(self.downloads_dir),
                "eventsEnabled": True,
            },
        )
        await cdp.call("Target.setDiscoverTargets", {"discover": True})
        await cdp.call(
            "Target.setAutoAttach",
            {
                "autoAttach": True,
                "waitForDebuggerOnStart": True,
                "flatten": True,
                "filter": [{"type": "page"}],
            },
        )
        targets = await cdp.call("Target.getTargets")
        pages = [t for t in targets["targetInfos"] if t["type"] == "page"]
        for page in pages:
            if not page["attached"]:
                await cdp.call(
                    "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}
                )
        if not pages:
            await self.open_tab(self.settings.home_url)
        await self._tab_attached.wait()
        boot = self._tabs[min(self._tabs)]
        await boot.ready.wait()
        self._spawn(self._watch_titles())

    async def stop(self) -> None:
        """Close Chromium (it quits on the pipe's EOF) and every pump."""
        self._stopping = True
        if self.sound is not None:
            self.sound.stop()
        for tab in self._tabs.values():
            if tab.pump is not None:
                await tab.pump.stop()
        for task in list(self._background):
            task.cancel()
        if self._chromium is not None:
            await self._chromium.stop(self._clock)

    # --- requests -------------------------------------------------------------------------

    def tabs(self) -> list[TabRow]:
        return [tab.row() for tab in sorted(self._tabs.values(), key=lambda t: t.number)]

    def tab_of_target(self, target: str) -> int | None:
        """The tab number a CDP target id (a hand-off's page id) has now, if it is still open."""
        return next((t.number for t in self._tabs.values() if t.target == target), None)

    async def open_tab(self, url: str) -> int:
        """A new tab in its own window; answers once the tab is followed, with its number.

        The first address opened replaces the boot tab while that is still the only tab, still
        blank and unviewed (it is closed once the new one is followed), so the person does not
        find an extra about:blank tab beside their page."""
        checked = check_url(url)
        blank = self._only_blank_tab() if checked != "about:blank" else None
        created = await self._cdp.call("Target.createTarget", {"url": checked, "newWindow": True})
        target = created["targetId"]
        while (number := self.tab_of_target(target)) is None:
            self._tab_attached.clear()
            await self._tab_attached.wait()
        await self._tabs[number].ready.wait()
        if blank is not None and blank.number in self._tabs:
            await self.close_tab(blank.number)
        return number

    def _only_blank_tab(self) -> _Tab | None:
        """The boot tab when it is the only tab, nobody views it, and it never left about:blank."""
        if len(self._tabs) != 1:
            return None
        (tab,) = self._tabs.values()
        moved = tab.nav_state is not None and (tab.nav_state.can_back or tab.nav_state.can_forward)
        untouched = tab.url == "about:blank" and tab.pump is None and not moved
        return tab if untouched else None

    async def navigate(self, number: int, url: str) -> None:
        tab = self._tab(number)
        result = await self._cdp.call("Page.navigate", {"url": check_url(url)}, tab.session)
        if result.get("errorText"):
            raise BrowserRequestRefused(f"{url} did not load: {result['errorText']}")

    async def close_tab(self, number: int) -> None:
        await self._cdp.call("Target.closeTarget", {"targetId": self._tab(number).target})

    async def view(self, number: int, *, webp: bool, jpeg: bool) -> NavState:
        """Which formats the tab's viewers read now (neither stops its screencast); answers
        where its history sits, which an attach shows before the first frame."""
        tab = self._tab(number)
        if not (webp or jpeg):
            if tab.pump is not None:
                pump, tab.pump = tab.pump, None
                await pump.stop()
                self._cdp.send("Page.stopScreencast", None, tab.session).add_done_callback(_quietly)
            return await self._nav_state(tab)
        started = tab.pump is None
        if tab.pump is None:
            tab.pump = FramePump(
                profile_id=self.settings.profile_id,
                tab=tab.number,
                clock=self._clock,
                sink=self._on_frame,
                seq=tab.frame_seq,
                capture_key=lambda: self._capture_key(tab),
                settings=self.settings.pump,
            )
            tab.pump.page_size = tab.viewport.css
            tab.pump.start()
        tab.pump.wants_webp, tab.pump.wants_jpeg = webp, jpeg
        tab.pump.ask_key_frame()
        if started:
            await self._start_screencast(tab)
        tab.nav_state = await self._nav_state(tab)
        return tab.nav_state

    async def resize(self, number: int, viewport: Viewport) -> None:
        """Lay the page out at a viewer's size; the next frame is a key frame at it."""
        tab = self._tab(number)
        if viewport == tab.viewport:
            return
        tab.previous_viewport, tab.viewport = tab.viewport, viewport
        await self._apply_viewport(tab)
        if tab.pump is not None:
            tab.pump.page_size = viewport.css
            tab.pump.ask_key_frame()

    def input(self, number: int, gesture: Gesture) -> None:
        """Send a gesture now; nothing here waits on Chromium's reply."""
        tab = self._tab(number)
        if isinstance(gesture, Move | Wheel):
            if tab.pointer.offer(gesture):
                self._send_pointer(tab, gesture)
            return
        waiting = tab.pointer.before_discrete()
        if waiting is not None:
            self._send_calls(tab, waiting)
        if tab.dialog is not None and isinstance(gesture, Key) and gesture.down:
            accept = _DIALOG_KEYS.get(gesture.key)
            if accept is not None:
                self._spawn(self.answer_dialog(number, accept=accept))
                return
        self._send_calls(tab, gesture)

    async def answer_dialog(self, number: int, *, accept: bool, text: str | None = None) -> None:
        """Accept or dismiss the JavaScript dialog holding the tab (Enter/Escape also do)."""
        tab = self._tab(number)
        if tab.dialog is None:
            raise BrowserRequestRefused(f"tab {number} has no dialog open")
        params: JsonObject = {"accept": accept}
        if text is not None:
            params["promptText"] = text
        await self._cdp.call("Page.handleJavaScriptDialog", params, tab.session)

    async def nav(self, number: int, *, back: bool) -> NavState:
        """One step through the tab's history; with nowhere to go, the state unchanged."""
        tab = self._tab(number)
        history = await self._cdp.call("Page.getNavigationHistory", None, tab.session)
        entries, index = history["entries"], history["currentIndex"]
        target = index - 1 if back else index + 1
        if not 0 <= target < len(entries):
            return NavState(number, index > 0, index < len(entries) - 1)
        await self._cdp.call(
            "Page.navigateToHistoryEntry", {"entryId": entries[target]["id"]}, tab.session
        )
        tab.nav_state = NavState(number, target > 0, target < len(entries) - 1)
        return tab.nav_state

    def listen(self, number: int, on: bool) -> None:
        """Whether the tab's sound is read and sent (any of its viewers hears it)."""
        self._tab(number)
        if self.sound is None:
            raise BrowserRequestRefused("this profile's browser runs without sound")
        self.sound.listen(number, on)

    async def sound_server(self) -> None:
        """The sound server is (back) with this profile's sink: Chromium's audio reconnects."""
        if self.sound is not None:
            await self.sound.reconnect()

    async def answer_files(self, ask_id: int, files: list[ChosenFile] | None) -> list[Path]:
        """Hand the chosen files to the page's chooser (None or [] dismisses); their paths."""
        ask = self._asks.pop(ask_id, None)
        if ask is None:
            raise BrowserRequestRefused(f"no file chooser is waiting under id {ask_id}")
        if not files:
            return []
        chosen = files if ask.multiple else files[:1]
        paths = await asyncio.to_thread(_write_chosen, self.uploads_dir / str(ask_id), chosen)
        tab = self._tab(ask.tab)
        await self._cdp.call(
            "DOM.setFileInputFiles",
            {"files": [str(p) for p in paths], "backendNodeId": ask.node},
            tab.session,
        )
        return paths

    # --- internals ------------------------------------------------------------------------

    @property
    def _cdp(self) -> Any:
        if self._chromium is None:
            raise BrowserGone("the browser host has not started Chromium")
        return self._chromium.connection

    def _tab(self, number: int) -> _Tab:
        tab = self._tabs.get(number)
        if tab is None:
            open_now = ", ".join(str(n) for n in sorted(self._tabs)) or "none"
            raise BrowserRequestRefused(f"tab {number} is not open (open tabs: {open_now})")
        return tab

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background_done)

    def _background_done(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            error = task.exception()
            log.warning("browser_host_task_failed", error=str(error), kind=type(error).__name__)

    def _send_calls(self, tab: _Tab, gesture: Gesture) -> list[asyncio.Future[JsonObject]]:
        sent = []
        for method, params in to_cdp(gesture, tab.viewport.touch):
            future = self._cdp.send(method, params, tab.session)
            future.add_done_callback(_quietly)
            sent.append(future)
        return sent

    def _send_pointer(self, tab: _Tab, gesture: Move | Wheel) -> None:
        sent = self._send_calls(tab, gesture)

        def landed(_: object) -> None:
            following = tab.pointer.landed()
            if following is not None:
                self._send_pointer(tab, following)

        if sent:
            sent[-1].add_done_callback(landed)
        else:
            landed(None)

    async def _capture_key(self, tab: _Tab) -> bytes:
        """A lossless capture; not before the tab is set up: a tab still paused on its start
        answers no capture, and holding `emulation` then would keep it paused for good."""
        await tab.ready.wait()
        async with tab.emulation:
            call = asyncio.ensure_future(
                self._cdp.call(
                    "Page.captureScreenshot", {"format": "webp", "quality": 100}, tab.session
                )
            )
            try:
                shot = await asyncio.shield(call)
            except asyncio.CancelledError:
                # The pump gave up (a navigation overtook it, or its bound passed), but Chromium
                # may still be capturing, and when it ends it puts back the metrics it started
                # under: a resize applied meanwhile would be undone, for good.
                await asyncio.wait({call}, timeout=ABANDONED_CAPTURE_S)
                if not call.done():
                    call.cancel()
                elif not call.cancelled():
                    call.exception()  # retrieved: nobody waits for this capture any more
                raise
        return base64.b64decode(shot["data"])

    async def _refresh_info(self, tab: _Tab) -> None:
        """Chromium sends no event when a script sets the title: ask after loads and moves."""
        info = await self._cdp.call("Target.getTargetInfo", {"targetId": tab.target})
        self._info_changed(info, None)

    async def _watch_titles(self) -> None:
        """While anything is viewed, read every tab's title each `TITLE_POLL_S` (one call), so
        a title a script sets after load still reaches the strip."""
        while True:
            await self._clock.sleep(TITLE_POLL_S)
            if any(tab.pump is not None for tab in self._tabs.values()):
                targets = await self._cdp.call("Target.getTargets")
                for info in targets["targetInfos"]:
                    self._info_changed({"targetInfo": info}, None)

    async def _start_screencast(self, tab: _Tab) -> None:
        await self._cdp.call("Page.startScreencast", SCREENCAST, tab.session)

    async def _apply_viewport(self, tab: _Tab) -> None:
        async with tab.emulation:
            viewport = tab.viewport
            await self._cdp.call(
                "Emulation.setDeviceMetricsOverride", viewport.device_metrics(), tab.session
            )
            await self._cdp.call(
                "Emulation.setTouchEmulationEnabled", {"enabled": viewport.touch}, tab.session
            )

    async def _nav_state(self, tab: _Tab) -> NavState:
        history = await self._cdp.call("Page.getNavigationHistory", None, tab.session)
        index, count = history["currentIndex"], len(history["entries"])
        return NavState(tab.number, index > 0, index < count - 1)

    async def _push_nav_state(self, tab: _Tab) -> None:
        """Tell viewers where history sits when the page moved on its own."""
        for _ in range(NAV_STATE_TRIES):
            try:
                state = await self._nav_state(tab)
                break
            except CdpCommandFailed as error:  # mid-commit: the page is not there to ask yet
                log.debug("browser_nav_state_deferred", tab=tab.number, error=str(error))
                await self._clock.sleep(NAV_STATE_RETRY_S)
        else:
            return
        if state != tab.nav_state:
            tab.nav_state = state
            self._on_event(NavMoved(state=state))

    async def _set_up(self, tab: _Tab) -> None:
        """Domains and overrides a tab needs before its page runs (it waits for the debugger)."""
        cdp, session = self._cdp, tab.session
        await cdp.call("Page.enable", None, session)
        await cdp.call("Page.setInterceptFileChooserDialog", {"enabled": True}, session)
        await self._apply_viewport(tab)
        if self.sound is not None:
            for enable in SOUND_DOMAINS:
                await cdp.call(enable, None, session)
        await cdp.call("Runtime.runIfWaitingForDebugger", None, session)
        tab.ready.set()

    def _tabs_changed(self) -> None:
        self._on_event(TabsChanged(rows=self.tabs()))

    def _chromium_exited(self, exited: asyncio.Future[str]) -> None:
        if self._stopping:
            return
        reason = exited.result()
        if self.sound is not None:
            self.sound.stop()
        viewed = sorted(t.number for t in self._tabs.values() if t.pump is not None)
        for tab in self._tabs.values():
            if tab.pump is not None:
                self._spawn(tab.pump.stop())
                tab.pump = None
        self._on_event(SurfaceFailed(reason=reason, tabs=viewed))
        if not self.failed.done():
            self.failed.set_result(reason)

    def _cdp_event(self, event: CdpEvent) -> None:
        if event.method in SOUND_EVENTS:
            self._sound_event(event)
            return
        handler = _HANDLERS.get(event.method)
        if handler is None:
            return
        if event.session_id is None:
            handler(self, event.params, None)
            return
        tab = self._by_session.get(event.session_id)
        if tab is not None:
            handler(self, event.params, tab)

    def _sound_event(self, event: CdpEvent) -> None:
        tab = self._by_session.get(event.session_id or "")
        if tab is not None and self.sound is not None:
            self.sound.audibility.event(tab.number, event.method, event.params)

    def _attached(self, params: JsonObject, _: _Tab | None) -> None:
        info = params["targetInfo"]
        if info["type"] != "page":
            return
        number = next(self._numbers)
        if number > TAB_NUMBER_LIMIT:
            log.error("browser_tab_numbers_exhausted", target=info["targetId"])
            return
        tab = _Tab(
            number=number,
            target=info["targetId"],
            session=params["sessionId"],
            title=info.get("title", ""),
            url=info.get("url", ""),
            opener=self.tab_of_target(info.get("openerId", "")),
            viewport=self.settings.default_viewport,
        )
        self._tabs[number] = tab
        self._by_session[tab.session] = tab
        self._spawn(self._set_up(tab))
        self._tab_attached.set()
        log.info("browser_tab_opened", tab=number, target=tab.target, opener=tab.opener)
        self._tabs_changed()

    def _detached(self, params: JsonObject, _: _Tab | None) -> None:
        tab = self._by_session.pop(params["sessionId"], None)
        if tab is None:
            return
        del self._tabs[tab.number]
        if self.sound is not None:
            self.sound.tab_gone(tab.number)
        if tab.pump is not None:
            self._spawn(tab.pump.stop())
            tab.pump = None
        for ask_id, ask in list(self._asks.items()):
            if ask.tab == tab.number:
                del self._asks[ask_id]
                self._on_event(FileDialogGone(ask=ask_id))
        log.info("browser_tab_closed", tab=tab.number)
        self._tabs_changed()

    def _info_changed(self, params: JsonObject, _: _Tab | None) -> None:
        info = params["targetInfo"]
        number = self.tab_of_target(info["targetId"])
        if number is None:
            return
        tab = self._tabs[number]
        if (tab.title, tab.url) != (info.get("title", ""), info.get("url", "")):
            tab.title, tab.url = info.get("title", ""), info.get("url", "")
            self._tabs_changed()

    def _screencast_frame(self, params: JsonObject, tab: _Tab | None) -> None:
        assert tab is not None
        self._cdp.send(
            "Page.screencastFrameAck", {"sessionId": params["sessionId"]}, tab.session
        ).add_done_callback(_quietly)
        if tab.pump is not None:
            metadata = params.get("metadata", {})
            page_size = frame_page_size(
                (
                    round(metadata.get("deviceWidth", tab.viewport.css[0])),
                    round(metadata.get("deviceHeight", tab.viewport.css[1])),
                ),
                tab.viewport,
                tab.previous_viewport,
            )
            tab.pump.paint(base64.b64decode(params["data"]), page_size)

    def _dialog_opening(self, params: JsonObject, tab: _Tab | None) -> None:
        assert tab is not None
        tab.dialog = Dialog(params.get("type", "alert"), params.get("message", ""))
        tab.pointer.reset()
        self._tabs_changed()

    def _dialog_closed(self, _: JsonObject, tab: _Tab | None) -> None:
        assert tab is not None
        tab.dialog = None
        self._tabs_changed()
        self._spawn(self._refresh_info(tab))

    def _loaded(self, _: JsonObject, tab: _Tab | None) -> None:
        assert tab is not None
        self._spawn(self._refresh_info(tab))
        if tab.pump is not None:
            self._spawn(self._push_nav_state(tab))

    def _file_chooser(self, params: JsonObject, tab: _Tab | None) -> None:
        assert tab is not None
        ask_id = next(self._ask_ids)
        multiple = params.get("mode") == "selectMultiple"
        self._asks[ask_id] = _FileAsk(tab.number, params["backendNodeId"], multiple)
        self._on_event(FileDialog(ask=ask_id, tab=tab.number, multiple=multiple))

    def _navigated(self, params: JsonObject, tab: _Tab | None) -> None:
        assert tab is not None
        if not _main_frame(params, tab):
            return
        if tab.pump is not None:
            self._spawn(self._push_nav_state(tab))
        self._spawn(self._refresh_info(tab))

    def _committed(self, params: JsonObject, tab: _Tab | None) -> None:
        """A frame committed a document; the main frame's loses any key frame capture."""
        assert tab is not None
        self._navigated(params, tab)
        if _main_frame(params, tab) and tab.pump is not None:
            tab.pump.navigated()

    def _download_begins(self, params: JsonObject, _: _Tab | None) -> None:
        self._downloads[params["guid"]] = _Download(
            self.tab_of_target(params.get("frameId", "")), params.get("suggestedFilename", "")
        )

    def _download_progress(self, params: JsonObject, _: _Tab | None) -> None:
        state = params.get("state")
        if state not in {"completed", "canceled"}:
            return
        download = self._downloads.pop(params["guid"], None)
        path = self.downloads_dir / params["guid"]
        if download is None:
            path.unlink(missing_ok=True)
            return
        if state == "canceled":
            self._on_event(Download(download.tab, download.name, None, "the download was canceled"))
            path.unlink(missing_ok=True)
            return
        self._spawn(self._hand_over(download, path))

    async def _hand_over(self, download: _Download, path: Path) -> None:
        """Offer a finished download once, then delete the server's copy."""
        data, refusal = await asyncio.to_thread(_take_download, path)
        self._on_event(Download(download.tab, download.name, data, refusal))


def _main_frame(params: JsonObject, tab: _Tab) -> bool:
    """A navigation event about the tab's own (top) frame, not one of its iframes."""
    frame = params.get("frame", params)
    return bool(
        frame.get("parentId") is None and frame.get("id", params.get("frameId")) == tab.target
    )


def _quietly(future: asyncio.Future[JsonObject]) -> None:
    """Fire-and-forget sends: a refusal (a closed tab under a move) is logged, not raised."""
    if not future.cancelled() and (error := future.exception()) is not None:
        log.debug("browser_input_call_failed", error=str(error))


_Handler = Callable[[BrowserHost, JsonObject, "_Tab | None"], None]
_HANDLERS: dict[str, _Handler] = {
    "Target.attachedToTarget": BrowserHost._attached,
    "Target.detachedFromTarget": BrowserHost._detached,
    "Target.targetInfoChanged": BrowserHost._info_changed,
    "Page.screencastFrame": BrowserHost._screencast_frame,
    "Page.javascriptDialogOpening": BrowserHost._dialog_opening,
    "Page.javascriptDialogClosed": BrowserHost._dialog_closed,
    "Page.fileChooserOpened": BrowserHost._file_chooser,
    "Page.frameNavigated": BrowserHost._committed,
    "Page.loadEventFired": BrowserHost._loaded,
    "Page.navigatedWithinDocument": BrowserHost._navigated,
    "Browser.downloadWillBegin": BrowserHost._download_begins,
    "Browser.downloadProgress": BrowserHost._download_progress,
}


def _write_chosen(folder: Path, files: list[ChosenFile]) -> list[Path]:
    """Write a chooser's files beside the profile, where Chromium can read them."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for chosen in files:
        path = folder / check_file_name(chosen.name)
        path.write_bytes(chosen.data)
        paths.append(path)
    return paths


def _take_download(path: Path) -> tuple[bytes | None, str | None]:
    """The finished file's bytes, or the words refusing it; the server's copy is gone after."""
    try:
        refusal = download_refusal(path.stat().st_size)
        return (None if refusal else path.read_bytes()), refusal
    finally:
        path.unlink(missing_ok=True)
