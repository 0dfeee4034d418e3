"""The first address opened in a profile's browser replaces its blank boot tab (issue 36 item 8:
it opened beside it, and the person found an extra about:blank tab); later ones open new tabs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from forge.workers.browser.host import BrowserHost, HostSettings

from .harness import Recorder

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def host(tmp_path: Path) -> AsyncIterator[tuple[BrowserHost, Recorder]]:
    """A fresh Chromium: its only tab is the boot tab at about:blank."""
    recorder = Recorder()
    started = BrowserHost(
        HostSettings(profile_id=5, profile_dir=tmp_path / "profile"), recorder.event, recorder.frame
    )
    await started.start()
    yield started, recorder
    await started.stop()


async def test_the_first_address_fills_the_blank_boot_tab(
    host: tuple[BrowserHost, Recorder], site: str
) -> None:
    browser, recorder = host
    (boot,) = browser.tabs()
    assert boot.url == "about:blank"
    first = await browser.open_tab(f"{site}/button")
    await recorder.until(lambda: [row.url for row in browser.tabs()] == [f"{site}/button"])
    assert browser.tabs()[0].number == first
    second = await browser.open_tab(f"{site}/button")
    assert second != first
    assert len(browser.tabs()) == 2
