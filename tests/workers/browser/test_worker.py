"""The browser host as a supervised worker: frames on tab streams, Chromium's death, the host's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil
import pytest_asyncio

from forge.ipc.manager import WorkerEvent, WorkerHandle, WorkerManager, WorkerSpec, WorkerState
from forge.ipc.messages import StreamFrame

from .harness import WAIT_S, Recorder


@pytest_asyncio.fixture
async def manager(forge_dirs: dict[str, Path]) -> AsyncIterator[WorkerManager]:
    async with WorkerManager() as manager:
        yield manager


def browser_spec(tmp_path: Path, **config: Any) -> WorkerSpec:
    config = {"profile_id": 9, "profile_key": "acme/main", **config}
    config.setdefault("profile_dir", str(tmp_path / "profile"))
    return WorkerSpec("browser-acme-main", "browser", "forge.workers.browser", config=config)


class Listener(Recorder):
    """Frames and ends of tab streams, and the worker's events, as the supervisor would see them."""

    def __init__(self, handle: WorkerHandle) -> None:
        super().__init__()
        self.ends: list[tuple[str, str]] = []
        self.worker_events: list[WorkerEvent] = []
        handle.subscribe(None, self.on_frame, self.on_end)
        handle.on_event(self.on_event)

    def on_frame(self, frame: StreamFrame) -> None:
        self.frame(bytes(frame.payload))

    def on_end(self, stream: str, reason: str) -> None:
        self.ends.append((stream, reason))
        self._changed.set()

    def on_event(self, event: WorkerEvent) -> None:
        self.worker_events.append(event)
        self._changed.set()


async def open_and_view(handle: WorkerHandle, listener: Listener, url: str) -> int:
    opened = await handle.request("open", {"url": url}, within=WAIT_S)
    tab: int = opened.result["tab"]
    await handle.request("view", {"tab": tab, "webp": True}, within=WAIT_S)
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
    first = listener.tab_frames(tab)[0]
    assert (first.profile, first.tab, first.key) == (9, tab, True)
    down = {"press": {"x": 200, "y": 150, "button": "left", "down": True, "clicks": 1}}
    up = {"press": {"x": 200, "y": 150, "button": "left", "down": False, "clicks": 1}}
    await handle.request("input", {"tab": tab, "event": down}, within=WAIT_S)
    await handle.request("input", {"tab": tab, "event": up}, within=WAIT_S)

    def titled(title: str) -> bool:
        rows = [e.data["rows"] for e in listener.worker_events if e.event == "tabs"]
        return bool(rows) and any(r["title"] == title for r in rows[-1])

    await listener.until(lambda: titled("clicked"))

    chromium = chromium_of(handle)
    chromium.kill()
    await listener.until(lambda: listener.ends)
    assert listener.ends == [(f"tab:{tab}", "Chromium was killed by signal 9 (SIGKILL)")]
    failed = [e.data for e in listener.worker_events if e.event == "surface_failed"]
    assert failed == [{"reason": "Chromium was killed by signal 9 (SIGKILL)", "tabs": [tab]}]

    row = await handle.wait_for(
        lambda r: r.state is WorkerState.READY and r.restarts == 1, within=WAIT_S
    )
    assert row.pid != chromium.pid
    listener.frames.clear()
    again = await open_and_view(handle, listener, f"{site}/button")
    assert listener.tab_frames(again)[0].key


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
    assert listener.ends == [(f"tab:{tab}", "worker_crashed")]
    await asyncio.to_thread(chromium.wait, WAIT_S)
    assert not chromium.is_running()


async def test_a_missing_chromium_fails_once_and_is_not_restarted(
    manager: WorkerManager, tmp_path: Path
) -> None:
    handle = manager.start(browser_spec(tmp_path, executable=str(tmp_path / "no-chromium")))
    row = await handle.wait_for(lambda r: r.state is WorkerState.FAILED, within=WAIT_S)
    assert row.restarts == 0
    assert row.last_exit == 78
