"""The browser host as a supervised worker: requests in, tab frames and page events out.

Spawn, heartbeat, restart and crash reporting are `forge.ipc`'s; this adapter only maps the
requests `protocol.py` declares to the host's methods, and the host's events to the protocol's.
Each viewed tab's frames ride their own bulk stream `tab:<number>`, offered (a full supervisor
queue drops the frame: a newer one follows), so a subscriber knows the tab from the stream and
learns a surface's end from `on_end`. The kind-2 frames of every listened tab ride one stream,
`audio`, offered the same way (each names its tab in its header).

When Chromium dies on its own, every viewed tab's stream ends with Chromium's reason and a
`surface_failed` event says it once more; then the worker exits 1, so the lifecycle restarts it
with a fresh Chromium and a re-attach works. A missing Chromium is a configuration error (exit 78):
it is shown, never restarted in a loop.
"""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import msgspec

from forge.ipc.errors import RequestFailed, WorkerConfigError
from forge.ipc.worker import BulkStream, Worker, handles
from forge.wire.binary import BROWSER_FRAME_HEADER
from forge.wire.errors import ClientRefusal
from forge.wire.files import ChosenFile, FileAnswerRefused, check_file_name
from forge.workers.browser.errors import BrowserGone, CdpCommandFailed
from forge.workers.browser.gestures import GestureInvalid, decode_gesture
from forge.workers.browser.host import (
    BrowserHost,
    BrowserRequestRefused,
    Download,
    HostEvent,
    HostSettings,
    Viewport,
)
from forge.workers.browser.protocol import (
    AUDIO_STREAM,
    BROWSER,
    BrowserConfig,
    BrowserMissing,
    Close,
    DialogAnswer,
    DownloadDone,
    FileAnswer,
    FilesWritten,
    Input,
    Listen,
    Nav,
    Navigate,
    NavState,
    Open,
    Page,
    Resize,
    SoundServer,
    SurfaceFailed,
    TabNumber,
    TabRows,
    Tabs,
    View,
    tab_stream,
)

CHROMIUM_FAILED_EXIT = 1
"""The worker's exit code after its Chromium died: an ordinary crash, restarted with backoff."""

T = TypeVar("T")


class BrowserWorker(Worker):
    """One profile's host; its config is a `BrowserConfig`."""

    kind = BROWSER.kind
    capabilities = ("webp", "jpeg")

    async def setup(self) -> None:
        try:
            config = msgspec.convert(self.config, BrowserConfig)
        except msgspec.ValidationError as error:
            raise WorkerConfigError(f"browser worker config: {error}") from None
        settings = HostSettings(
            profile_id=config.profile_id,
            profile_dir=Path(config.profile_dir),
            executable=Path(config.executable),
            home_url=config.home_url,
            audio=config.audio,
        )
        self._streams: dict[int, BulkStream] = {}
        self._audio = self.stream(AUDIO_STREAM)
        self._failed: str | None = None
        self._surface_failed: SurfaceFailed | None = None
        self.host = BrowserHost(
            settings, self._on_event, self._on_frame, self.clock, on_audio=self._offer_audio
        )
        try:
            await self.host.start()
        except BrowserMissing as missing:
            raise WorkerConfigError(str(missing)) from None
        except BrowserRequestRefused as refused:
            raise WorkerConfigError(f"[browser] home_url: {refused}") from None
        self.spawn(self._watch_chromium())

    async def teardown(self) -> None:
        await self.host.stop()

    async def serve(self) -> int:
        code = await super().serve()
        return CHROMIUM_FAILED_EXIT if self._failed is not None else code

    def _on_frame(self, frame: bytes) -> None:
        _, _, tab, *_ = BROWSER_FRAME_HEADER.unpack_from(frame)
        stream = self._streams.get(tab)
        if stream is None:
            stream = self._streams[tab] = self.stream(tab_stream(tab))
        stream.offer(frame)

    def _offer_audio(self, frame: bytes) -> None:
        self._audio.offer(frame)

    def _on_event(self, event: HostEvent) -> None:
        if isinstance(event, SurfaceFailed):
            self._surface_failed = event  # sent by `_watch_chromium`, before the worker stops
        elif isinstance(event, Download):
            done = DownloadDone(tab=event.tab, name=event.name, error=event.error)
            self.spawn(self.emit(done, (event.data,) if event.data is not None else ()))
        else:
            self.spawn(self.emit(event))

    async def _watch_chromium(self) -> None:
        reason = await self.host.failed
        self._failed = reason
        self.log.error("browser_host_chromium_failed", reason=reason)
        if self._surface_failed is not None:
            await self.emit(self._surface_failed)
        for tab, stream in list(self._streams.items()):
            await stream.end(reason)
            del self._streams[tab]
        self.request_stop()

    # --- requests -------------------------------------------------------------------------

    async def _call(self, work: Awaitable[T]) -> T:
        """Run one host call, turning its refusals into the request's error with their words."""
        try:
            return await work
        except BrowserRequestRefused as refused:
            raise RequestFailed("refused", str(refused)) from None
        except CdpCommandFailed as failed:
            raise RequestFailed("browser_refused", str(failed)) from None
        except BrowserGone as gone:
            raise RequestFailed("browser_gone", gone.reason) from None

    @handles(Tabs)
    async def tabs(self, request: Tabs) -> TabRows:
        return TabRows(self.host.tabs())

    @handles(Page)
    async def page(self, request: Page) -> TabNumber:
        tab = self.host.tab_of_target(request.target)
        if tab is None:
            raise RequestFailed("refused", f"page {request.target} is not open")
        return TabNumber(tab)

    @handles(Open)
    async def open(self, request: Open) -> TabNumber:
        return TabNumber(await self._call(self.host.open_tab(request.url)))

    @handles(Navigate)
    async def navigate(self, request: Navigate) -> None:
        await self._call(self.host.navigate(request.tab, request.url))

    @handles(Close)
    async def close(self, request: Close) -> None:
        await self._call(self.host.close_tab(request.tab))

    @handles(View)
    async def view(self, request: View) -> NavState:
        return await self._call(self.host.view(request.tab, webp=request.webp, jpeg=request.jpeg))

    @handles(Resize)
    async def resize(self, request: Resize) -> None:
        viewport = Viewport(request.width, request.height, request.scale)
        await self._call(self.host.resize(request.tab, viewport))

    @handles(Input)
    async def input(self, request: Input) -> None:
        try:
            self.host.input(request.tab, decode_gesture(request.event))
        except (ClientRefusal, GestureInvalid) as invalid:
            raise RequestFailed("bad_gesture", str(invalid)) from None
        except BrowserRequestRefused as refused:
            raise RequestFailed("refused", str(refused)) from None

    @handles(Nav)
    async def nav(self, request: Nav) -> NavState:
        return await self._call(self.host.nav(request.tab, back=request.back))

    @handles(DialogAnswer)
    async def dialog_answer(self, request: DialogAnswer) -> None:
        answer = self.host.answer_dialog(request.tab, accept=request.accept, text=request.text)
        await self._call(answer)

    @handles(Listen)
    async def listen(self, request: Listen) -> None:
        try:
            self.host.listen(request.tab, request.on)
        except BrowserRequestRefused as refused:
            raise RequestFailed("refused", str(refused)) from None

    @handles(SoundServer)
    async def sound_server(self, request: SoundServer) -> None:
        await self.host.sound_server()

    @handles(FileAnswer, payloads=True)
    async def file_answer(
        self, request: FileAnswer, payloads: tuple[memoryview, ...]
    ) -> FilesWritten:
        if len(request.names) != len(payloads):
            raise RequestFailed("bad_request", "file_answer: one payload per name")
        try:
            files = [
                ChosenFile(check_file_name(name), bytes(data))
                for name, data in zip(request.names, payloads, strict=True)
            ]
        except FileAnswerRefused as refused:
            raise RequestFailed("refused", str(refused)) from None
        written = await self._call(self.host.answer_files(request.ask, files))
        return FilesWritten([str(p) for p in written])
