"""The browser host as a supervised worker: frames on tab streams, Chromium's death, the host's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import psutil
import pytest
import pytest_asyncio

from forge.ipc.errors import RequestFailed
from forge.ipc.manager import WorkerEvent, WorkerHandle, WorkerManager, WorkerSpec, WorkerState
from forge.ipc.messages import StreamFrame
from forge.ipc.protocol import BAD_REQUEST, call
from forge.ipc.protocol import WorkerEvent as TypedEvent
from forge.workers.browser.protocol import (
    BROWSER,
    BrowserConfig,
    Input,
    Open,
    SurfaceFailed,
    TabsChanged,
    View,
    tab_stream,
)

from .harness import WAIT_S, Recorder


@pytest_asyncio.fixture
async def manager(forge_dirs: dict[str, Path]) -> AsyncIterator[WorkerManager]:
    async with WorkerManager() as manager:
        yield manager


def browser_spec(tmp_path: Path, **config: Any) -> WorkerSpec:
    settings = BrowserConfig(
        profile_id=9, profile_key="acme/main", profile_dir=str(tmp_path / "profile"), **config
    )
    return BROWSER.spec("browser-acme-main", config=msgspec.to_builtins(settings))


class Listener(Recorder):
    """Frames and ends of tab streams, and the worker's events, as the supervisor would see them."""

    def __init__(self, handle: WorkerHandle) -> None:
        super().__init__()
        self.ends: list[tuple[str, str]] = []
        self.worker_events: list[TypedEvent] = []
        handle.subscribe(None, self.on_frame, self.on_end)
        handle.on_event(self.on_event)

    def on_frame(self, frame: StreamFrame) -> None:
        self.frame(bytes(frame.payload))

    def on_end(self, stream: str, reason: str) -> None:
        self.ends.append((stream, reason))
        self._changed.set()

    def on_event(self, event: WorkerEvent) -> None:
        typed = BROWSER.decode_event(event.event, event.data)
        assert typed is not None, event.event
        self.worker_events.append(typed)
        self._changed.set()


async def open_and_view(handle: WorkerHandle, listener: Listener, url: str) -> int:
    """Open and view a tab, waiting for its key frame. Motion may come first: a capture the
    page's navigation overtook lets the held paint through (forge/workers/browser/pump.py)."""
    tab = (await call(handle, Open(url=url), within=WAIT_S)).tab
    await call(handle, View(tab=tab, webp=True), within=WAIT_S)
    await listener.until(lambda: any(f.key for f in listener.tab_frames(tab)))
    return tab


def chromium_of(handle: WorkerHandle) -> psutil.Process:
    assert handle.pid is not None
    (chromium,) = [c for c in psutil.Process(handle.pid).children() if "chrom" in c.name().lower()]
    return chromium


async def test_frames_input_and_a_chromium_crash_through_the_worker(
    manager: WorkerManager, tmp_path: Path, site: str
) -> None:
    handle = manager.start(browser_spec(tmp_path))
    listener = Listener(handle)
    tab = await open_and_view(handle, listener, f"{site}/button")
    key = next(f for f in listener.tab_frames(tab) if f.key)
    assert (key.profile, key.tab) == (9, tab)
    down = {"press": {"x": 200, "y": 150, "button": "left", "down": True, "clicks": 1}}
    up = {"press": {"x": 200, "y": 150, "button": "left", "down": False, "clicks": 1}}
    await call(handle, Input(tab=tab, event=down), within=WAIT_S)
    await call(handle, Input(tab=tab, event=up), within=WAIT_S)

    def titled(title: str) -> bool:
        rows = [e.rows for e in listener.worker_events if isinstance(e, TabsChanged)]
        return bool(rows) and any(r.title == title for r in rows[-1])

    await listener.until(lambda: titled("clicked"))

    def surface_failed() -> list[TypedEvent]:
        return [e for e in listener.worker_events if isinstance(e, SurfaceFailed)]

    chromium = chromium_of(handle)
    restarts = handle.row.restarts  # a loaded machine may already have restarted a slow start
    chromium.kill()
    # The stream's end rides the bulk socket and `surface_failed` the control socket: either
    # arrives first (docs/architecture.md, the browser worker), so both are awaited.
    await listener.until(lambda: listener.ends and surface_failed())
    assert listener.ends == [(tab_stream(tab), "Chromium was killed by signal 9 (SIGKILL)")]
    reason = "Chromium was killed by signal 9 (SIGKILL)"
    assert surface_failed() == [SurfaceFailed(reason=reason, tabs=[tab])]

    row = await handle.wait_for(
        lambda r: r.state is WorkerState.READY and r.restarts == restarts + 1, within=WAIT_S
    )
    assert row.pid != chromium.pid
    listener.frames.clear()
    again = await open_and_view(handle, listener, f"{site}/button")
    assert {f.profile for f in listener.tab_frames(again)} == {9}


async def test_killing_the_host_takes_its_chromium_along(
    manager: WorkerManager, tmp_path: Path
) -> None:
    handle = manager.start(browser_spec(tmp_path))
    listener = Listener(handle)
    tab = await open_and_view(handle, listener, "about:blank")
    chromium = chromium_of(handle)
    assert handle.pid is not None
    psutil.Process(handle.pid).kill()
    await listener.until(lambda: listener.ends)
    assert listener.ends == [(tab_stream(tab), "worker_crashed")]
    await asyncio.to_thread(chromium.wait, WAIT_S)
    assert not chromium.is_running()


async def test_a_missing_chromium_fails_once_and_is_not_restarted(
    manager: WorkerManager, tmp_path: Path
) -> None:
    handle = manager.start(browser_spec(tmp_path, executable=str(tmp_path / "no-chromium")))
    row = await handle.wait_for(lambda r: r.state is WorkerState.FAILED, within=WAIT_S)
    assert row.restarts == 0
    assert row.last_exit == 78


async def test_a_malformed_request_is_refused_naming_the_field(
    manager: WorkerManager, tmp_path: Path
) -> None:
    """The worker decodes each request into its protocol struct: no hand-written checks."""
    handle = manager.start(browser_spec(tmp_path))
    await handle.wait_for(lambda r: r.state is WorkerState.READY, within=WAIT_S)
    with pytest.raises(RequestFailed) as refused:
        await handle.request("view", {"tab": "one", "webp": True}, within=WAIT_S)
    assert refused.value.code == BAD_REQUEST
    assert refused.value.message == "view: Expected `int`, got `str` - at `$.tab`"
    with pytest.raises(RequestFailed) as missing:
        await handle.request("resize", {"tab": 1, "width": 10}, within=WAIT_S)
    assert missing.value.code == BAD_REQUEST
    assert "`height`" in missing.value.message
