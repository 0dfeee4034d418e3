"""The browser view's toolbars on a phone (issue 36 item 5: the seat's toolbar took two rows, a
quarter of the screen): at 360x740 and 390x844, as at 1280x800, the address bar and the bar that
types into the page are one row each, inside the screen, and nothing scrolls sideways."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import Supervised
from .test_browser import open_tab, wait_for_colour
from .test_phone_layout import OVERFLOWING_JS, SIZES, box, inside_the_screen


@pytest.fixture(params=SIZES)
def page(
    request: pytest.FixtureRequest, browser: Browser, supervised: Supervised
) -> Iterator[Page]:
    context = browser.new_context(**SIZES[request.param])
    supervised.pair(context)
    yield context.new_page()
    context.close()


def one_row(page: Page, selector: str) -> None:
    """Every shown item of the bar on one line, the bar no taller than one row of them."""
    bar = page.locator(selector)
    shown = [item for item in bar.locator(":scope > *").all() if item.is_visible()]
    assert shown, f"{selector} shows nothing"
    middles = {round(box(item)["y"] + box(item)["height"] / 2) for item in shown}
    assert max(middles) - min(middles) <= 2, f"{selector} wrapped: item middles at {middles}"
    tallest = max(box(item)["height"] for item in shown)
    assert box(bar)["height"] < 1.6 * tallest, f"{selector} is taller than one row"
    for item in shown:
        inside_the_screen(page, item)


def test_the_browser_views_bars_are_one_row_each(
    page: Page, supervised: Supervised, colour_page: str
) -> None:
    """As the controller, then as a second page's watcher (its bar offers Take control)."""
    width = page.viewport_size["width"] if page.viewport_size else 0
    open_tab(page, supervised, colour_page, f"bars{width}")
    wait_for_colour(page, "blue")
    expect(page.get_by_label("address")).to_be_visible()
    for bar in (".browserpane > .toolbar.address", ".browserpane > .toolbar.typebar"):
        one_row(page, bar)
    watcher = page.context.new_page()
    watcher.goto(page.url)
    expect(watcher.get_by_role("button", name="Take control")).to_be_visible()
    for bar in (".browserpane > .toolbar.address", ".browserpane > .toolbar.typebar"):
        one_row(watcher, bar)
    watcher.close()
    # A text box's own text may run past its edge (a long address), as in any browser's bar.
    overflowing = [row for row in page.evaluate(OVERFLOWING_JS) if not row.startswith("INPUT.")]
    assert overflowing == []
    assert page.evaluate("document.documentElement.scrollWidth") <= width
