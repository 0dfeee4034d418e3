"""After `forge supervise` restarts, the page says the old shell ended and this one is new
(issue 36 item 8: it showed a fresh shell with no word), on a phone and a desktop."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, expect

from .conftest import DESKTOP, PHONE, Supervised, open_terminal, wait_for_screen

SIZES: dict[str, dict[str, Any]] = {
    "360x740": {**PHONE, "viewport": {"width": 360, "height": 740}},
    "390x844": PHONE,
    "1280x800": DESKTOP,
}


@pytest.fixture(scope="module")
def supervised(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervised]:
    """A supervisor of this module's own: its tests restart it."""
    server = Supervised(tmp_path_factory.mktemp("restart"))
    server.start()
    yield server
    server.stop()


@pytest.mark.parametrize("size", SIZES)
def test_a_restart_is_said_over_the_new_shell(
    browser: Browser, supervised: Supervised, size: str
) -> None:
    context = browser.new_context(**SIZES[size])
    supervised.pair(context)
    page = context.new_page()
    open_terminal(page, supervised)
    notice = page.locator(".notices .banner", has_text="forge supervise restarted")
    expect(notice).to_have_count(0)
    supervised.stop()
    expect(page.locator("[data-link]")).to_have_attribute("data-link", "reconnecting")
    supervised.start()
    expect(page.locator("[data-role]")).to_have_attribute("data-role", "controller")
    wait_for_screen(page, r"[$#] *$")
    expect(notice).to_contain_text("shells and browser tabs ended with it; these are new ones")
    expect(notice).to_be_in_viewport()
    context.close()
