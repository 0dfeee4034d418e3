"""The browser host as a supervised worker: requests in, tab frames and page events out.

Spawn, heartbeat, restart and crash reporting are `forge.ipc`'s; this adapter only maps the host's
methods to requests and its events to IPC events. Each viewed tab's frames ride their own bulk
stream `tab:<number>`, offered (a full supervisor queue drops the frame: a newer one follows), so
a subscriber knows the tab from the stream and learns a surface's end from `on_end`.

When Chromium dies on its own, every viewed tab's stream ends with Chromium's reason and a
`surface_failed` event says it once more; then the worker exits 1, so the lifecycle restarts it
with a fresh Chromium and a re-attach works. A missing Chromium is a configuration error (exit 78):
it is shown, never restarted in a loop.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from forge import paths
from forge.ipc.errors import RequestFailed, WorkerConfigError
from forge.ipc.messages import Reply, Request
from forge.ipc.worker import BulkStream, Worker, handles
from forge.wire.binary import BROWSER_FRAME_HEADER
from forge.wire.errors import ClientRefusal
from forge.workers.browser.chromium import DEFAULT_EXECUTABLE
from forge.workers.browser.errors import BrowserGone, BrowserMissing, CdpCommandFailed
from forge.workers.browser.files import ChosenFile, FileAnswerRefused, check_file_name
from forge.workers.browser.gestures import GestureInvalid, decode_gesture
from forge.workers.browser.host import (
    BrowserHost,
    BrowserRequestRefused,
    Download,
    FileDialog,
    FileDialogGone,
    HostEvent,
    HostSettings,
    NavState,
    SurfaceFailed,
    TabRow,
    TabsChanged,
    Viewport,
)

KIND = "browser"

CHROMIUM_FAILED_EXIT = 1
"""The worker's exit code after its Chromium died: an ordinary crash, restarted with backoff."""


def profile_dir_for(profile_key: str) -> Path:
    """Where a profile `<org>/<name>` keeps its Chromium data, uploads and downloads."""
    org, _, name = profile_key.partition("/")
    return paths.state_dir() / "browser" / (org or "default") / (name or "default")


def tab_stream(tab: int) -> str:
    """The bulk stream that carries one tab's kind-1 frames."""
    return f"tab:{tab}"


def row_json(row: TabRow) -> dict[str, Any]:
    return dataclasses.asdict(row)


def event_message(event: HostEvent) -> tuple[str, dict[str, Any], tuple[bytes, ...]]:
    """An IPC event's name, JSON body and raw payloads (a download's bytes ride raw)."""
    if isinstance(event, TabsChanged):
        return "tabs", {"rows": [row_json(r) for r in event.rows]}, ()
    if isinstance(event, Download):
        body = {"tab": event.tab, "name": event.name, "error": event.error}
        return "download", body, (event.data,) if event.data is not None else ()
    names: dict[type[Any], str] = {
        NavState: "nav_state",
        FileDialog: "file_dialog",
        FileDialogGone: "file_dialog_gone",
        SurfaceFailed: "surface_failed",
    }
    return names[type(event)], dataclasses.asdict(event), ()


def _int(args: Any, name: str) -> int:
    value = args.get(name) if isinstance(args, dict) else None
    if not isinstance(value, int) or isinstance(value, bool):
        raise RequestFailed("bad_request", f"{name} must be an integer")
    return value


def _str(args: Any, name: str) -> str:
    value = args.get(name) if isinstance(args, dict) else None
    if not isinstance(value, str):
        raise RequestFailed("bad_request", f"{name} must be a string")
    return value


class BrowserWorker(Worker):
    """One profile's browser host. Config: profile_id, profile_key; optional executable,
    home_url, profile_dir."""

    kind = KIND
    capabilities = ("webp", "jpeg")

    async def setup(self) -> None:
        config = self.config
        try:
            profile_key = str(config.get("profile_key", "default/default"))
            settings = HostSettings(
                profile_id=int(config["profile_id"]),
                profile_dir=Path(config.get("profile_dir") or profile_dir_for(profile_key)),
                executable=Path(config.get("executable") or DEFAULT_EXECUTABLE),
                home_url=str(config.get("home_url") or "about:blank"),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise WorkerConfigError(f"browser worker config is incomplete: {error!r}") from None
        self._streams: dict[int, BulkStream] = {}
        self._failed: str | None = None
        self._surface_failed: SurfaceFailed | None = None
        self.host = BrowserHost(settings, self._on_event, self._on_frame, self.clock)
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

    def _on_event(self, event: HostEvent) -> None:
        if isinstance(event, SurfaceFailed):
            self._surface_failed = event  # sent by `_watch_chromium`, before the worker stops
            return
        name, body, payloads = event_message(event)
        self.spawn(self.emit(name, body, payloads))

    async def _watch_chromium(self) -> None:
        reason = await self.host.failed
        self._failed = reason
        self.log.error("browser_host_chromium_failed", reason=reason)
        if self._surface_failed is not None:
            await self.emit(*event_message(self._surface_failed)[:2])
        for tab, stream in list(self._streams.items()):
            await stream.end(reason)
            del self._streams[tab]
        self.request_stop()

    # --- requests -------------------------------------------------------------------------

    async def _call(self, work: Any) -> Any:
        """Run one host call, turning its refusals into the request's error with their words."""
        try:
            return await work
        except BrowserRequestRefused as refused:
            raise RequestFailed("refused", str(refused)) from None
        except CdpCommandFailed as failed:
            raise RequestFailed("browser_refused", str(failed)) from None
        except BrowserGone as gone:
            raise RequestFailed("browser_gone", gone.reason) from None

    @handles("tabs")
    async def tabs(self, request: Request) -> dict[str, Any]:
        return {"rows": [row_json(r) for r in self.host.tabs()]}

    @handles("page")
    async def page(self, request: Request) -> dict[str, Any]:
        """A CDP target id (a hand-off's page id) to the tab number it has now."""
        target = _str(request.args, "target")
        tab = self.host.tab_of_target(target)
        if tab is None:
            raise RequestFailed("refused", f"page {target} is not open")
        return {"tab": tab}

    @handles("open")
    async def open(self, request: Request) -> dict[str, Any]:
        return {"tab": await self._call(self.host.open_tab(_str(request.args, "url")))}

    @handles("navigate")
    async def navigate(self, request: Request) -> None:
        args = request.args
        await self._call(self.host.navigate(_int(args, "tab"), _str(args, "url")))

    @handles("close")
    async def close(self, request: Request) -> None:
        await self._call(self.host.close_tab(_int(request.args, "tab")))

    @handles("view")
    async def view(self, request: Request) -> dict[str, Any]:
        """Which formats the tab's viewers read (`webp`, `jpeg`); both false stops its frames.
        Answers the tab's nav state, and a key frame follows on the tab's stream."""
        args = request.args
        webp, jpeg = bool(args.get("webp")), bool(args.get("jpeg"))
        state = await self._call(self.host.view(_int(args, "tab"), webp=webp, jpeg=jpeg))
        return dataclasses.asdict(state)

    @handles("resize")
    async def resize(self, request: Request) -> None:
        args = request.args
        scale = args.get("scale", 1.0)
        if not isinstance(scale, int | float):
            raise RequestFailed("bad_request", "scale must be a number")
        viewport = Viewport(_int(args, "width"), _int(args, "height"), float(scale))
        await self._call(self.host.resize(_int(args, "tab"), viewport))

    @handles("input")
    async def input(self, request: Request) -> None:
        """Sent on at once; the reply says it was handed to Chromium, not that it landed."""
        tab = _int(request.args, "tab")
        try:
            self.host.input(tab, decode_gesture(request.args.get("event")))
        except (ClientRefusal, GestureInvalid) as invalid:
            raise RequestFailed("bad_gesture", str(invalid)) from None
        except BrowserRequestRefused as refused:
            raise RequestFailed("refused", str(refused)) from None

    @handles("nav")
    async def nav(self, request: Request) -> dict[str, Any]:
        args = request.args
        state = await self._call(self.host.nav(_int(args, "tab"), back=bool(args.get("back"))))
        return dataclasses.asdict(state)

    @handles("dialog_answer")
    async def dialog_answer(self, request: Request) -> None:
        args = request.args
        text = args.get("text")
        await self._call(
            self.host.answer_dialog(
                _int(args, "tab"),
                accept=bool(args.get("accept")),
                text=text if isinstance(text, str) else None,
            )
        )

    @handles("file_answer")
    async def file_answer(self, request: Request) -> Reply:
        """Names in `names`, bytes as the request's payloads in the same order; none dismisses."""
        names = request.args.get("names") or []
        if not isinstance(names, list) or len(names) != len(request.payloads):
            raise RequestFailed("bad_request", "one payload per name")
        try:
            files = [
                ChosenFile(check_file_name(name), bytes(data))
                for name, data in zip(names, request.payloads, strict=True)
            ]
        except FileAnswerRefused as refused:
            raise RequestFailed("refused", str(refused)) from None
        written = await self._call(self.host.answer_files(_int(request.args, "ask"), files))
        return Reply({"paths": [str(p) for p in written]})
