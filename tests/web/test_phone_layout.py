"""The seat's frame as a person sees it on a phone and a desktop (issue 36 item 5), at 360x740,
390x844 and 1280x800: the five pane tabs and Voice on their rows, the terminal's toolbar one row
(the less used tools behind ⋯ on a phone), nothing wider than the screen but the extra-keys row,
which says it scrolls and whose last keys type, a state badge that is no text box, no black band
under the terminal, and a seat's name on Home that opens it."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image
from playwright.sync_api import Browser, Locator, Page, expect

from .conftest import DESKTOP, PHONE, TIMEOUT_MS, Supervised

SIZES: dict[str, dict[str, Any]] = {
    "360x740": {**PHONE, "viewport": {"width": 360, "height": 740}},
    "390x844": PHONE,
    "1280x800": DESKTOP,
}
OVERFLOWING_JS = """() => [...document.querySelectorAll("*")]
    .filter((element) => element.clientWidth > 1 && element.scrollWidth > element.clientWidth + 1
        && getComputedStyle(element).overflowX !== "visible" && !element.closest(".extrakeys")
        && !element.closest(".xterm"))
    .map((element) => `${element.tagName}.${element.className} ${element.scrollWidth}`)"""
"""Elements a person could scroll sideways, but the extra-keys row (and xterm's own layers)."""


@pytest.fixture(params=SIZES)
def size(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def page(browser: Browser, supervised: Supervised, size: str) -> Iterator[Page]:
    context = browser.new_context(**SIZES[size])
    supervised.pair(context)
    yield context.new_page()
    context.close()


def is_phone(page: Page) -> bool:
    return bool(page.viewport_size and page.viewport_size["width"] <= 600)


def open_seat(page: Page, supervised: Supervised, project: str = "proj") -> None:
    page.goto(f"{supervised.url}#/seat/acme/{project}/lead/terminal")
    expect(page.locator("[data-role]")).to_have_attribute("data-role", "controller")


def box(locator: Locator) -> dict[str, float]:
    found = locator.bounding_box()
    assert found is not None
    return found


def inside_the_screen(page: Page, locator: Locator) -> None:
    width = page.viewport_size["width"] if page.viewport_size else 0
    where = box(locator)
    assert where["x"] >= 0
    assert where["x"] + where["width"] <= width + 0.5


def test_the_bars_fit_one_row_each_and_nothing_scrolls_sideways(
    page: Page, supervised: Supervised
) -> None:
    open_seat(page, supervised)
    tabs = page.get_by_role("tab")
    expect(tabs).to_have_count(5)
    tops = {round(box(tab)["y"]) for tab in tabs.all()}
    assert len(tops) == 1, "the pane tabs wrapped"
    for tab in [*tabs.all(), page.get_by_role("button", name="hear this seat")]:
        inside_the_screen(page, tab)
    voice = box(page.get_by_role("button", name="hear this seat"))
    middle = voice["y"] + voice["height"] / 2
    beside = [box(page.locator(".seatname")), box(tabs.first)]
    assert any(row["y"] <= middle <= row["y"] + row["height"] for row in beside), (
        "Voice is on a row of its own"
    )

    toolbar = page.locator(".terminalpane > .toolbar")
    shown = [
        item
        for item in toolbar.locator(":scope > :not(.toolmore), .toolmore > *").all()
        if item.is_visible()
    ]
    assert len({round(box(item)["y"] + box(item)["height"] / 2) for item in shown}) == 1
    for item in shown:
        inside_the_screen(page, item)
    copy = page.get_by_role("button", name="Copy")
    if is_phone(page):
        expect(copy).to_be_hidden()
        page.get_by_role("button", name="more tools").click()
        expect(copy).to_be_visible()
        inside_the_screen(page, copy)
        page.get_by_role("button", name="larger text").click()
        expect(copy).to_be_hidden()  # a tool used folds the menu again
    else:
        expect(copy).to_be_visible()
        expect(page.get_by_role("button", name="more tools")).to_be_hidden()
    assert page.evaluate(OVERFLOWING_JS) == []
    width = page.viewport_size["width"] if page.viewport_size else 0
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_the_extra_keys_say_they_scroll_and_the_last_ones_type(
    page: Page, supervised: Supervised
) -> None:
    if not is_phone(page):
        expect(page.locator(".extrakeys")).to_be_hidden()
        return
    open_seat(page, supervised, "typed")
    row = page.locator(".extrakeys")
    assert row.evaluate("(row) => row.scrollWidth > row.clientWidth")
    wrap = page.locator(".keyswrap")
    expect(wrap).to_have_attribute("data-more", "right")
    hint = wrap.evaluate("(wrap) => getComputedStyle(wrap, '::after').display")
    assert hint == "flex", "no hint that more keys lie to the right"
    slash = page.locator('.extrakeys [data-key="/"]')
    expect(slash).not_to_be_in_viewport()
    before = supervised.typed.read_bytes() if supervised.typed.exists() else b""
    row.evaluate("(row) => row.scrollTo({left: row.scrollWidth})")  # a swipe along the row
    expect(wrap).to_have_attribute("data-more", "left")
    expect(slash).to_be_in_viewport()
    slash.tap()
    page.locator('.extrakeys [data-key="-"]').tap()
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while supervised.typed.read_bytes() != before + b"/-" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert supervised.typed.read_bytes() == before + b"/-"


def test_the_state_is_a_badge_and_no_black_band_sits_under_the_terminal(
    page: Page, supervised: Supervised
) -> None:
    open_seat(page, supervised)
    badge = page.locator("[data-terminal-state]")
    expect(badge).to_have_text("idle")
    look = badge.evaluate(
        """(badge) => {
            const style = getComputedStyle(badge);
            const page = getComputedStyle(document.body);
            return [style.textAlign, style.backgroundColor, page.backgroundColor];
        }"""
    )
    assert look[0] == "center"
    assert look[1] not in ("rgba(0, 0, 0, 0)", look[2]), "it is filled as a text box is"

    term = box(page.locator(".term"))
    rows = box(page.locator(".term .xterm-screen"))
    shot = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    scale = shot.width / (page.viewport_size["width"] if page.viewport_size else 1)
    background = page.evaluate(
        "getComputedStyle(document.querySelector('.termwrap')).backgroundColor"
    )
    wanted = tuple(int(part) for part in background[4:-1].split(","))
    x = int((term["x"] + term["width"] / 2) * scale)
    below_rows = range(
        int((rows["y"] + rows["height"]) * scale) + 1, int((term["y"] + term["height"]) * scale) - 1
    )
    assert [shot.getpixel((x, y)) for y in below_rows] == [wanted] * len(below_rows)


def test_a_seats_name_on_home_opens_it(page: Page, supervised: Supervised) -> None:
    open_seat(page, supervised)
    page.goto(f"{supervised.url}#/")
    name = page.locator('[data-seat="acme/proj/lead"]').get_by_role("link", name="lead")
    name.click()
    expect(page).to_have_url(f"{supervised.url}#/seat/acme/proj/lead")
    # A seat without an agent opens on its terminal.
    expect(page.get_by_role("tab", name="terminal")).to_have_attribute("aria-selected", "true")
    expect(page.locator("[data-role]")).to_have_attribute("data-role", "controller")
