"""The views at their edges, in a real browser: the seat's process tree, every view on a 360 px
phone without sideways scrolling, and nothing moving when terminal output or tab frames arrive."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Browser, BrowserContext, expect

from forge.testing.pages import page_of, served

from .conftest import PHONE, Supervised, poll, wait_for_screen
from .test_browser import open_tab, wait_for_colour

NARROW: dict[str, Any] = {**PHONE, "viewport": {"width": 360, "height": 740}}
NO_SHIFT = 0.001
"""The layout-shift score counted as none: on a loaded machine Chromium once reported 0.00007
(a sub-pixel move) here with nothing visibly moving."""
SHIFTS_JS = """() => {
    window.forgeShiftObserver?.disconnect();  // counting again: an earlier count would add twice
    window.forgeShifts = 0;
    window.forgeShiftObserver = new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) {
            if (!entry.hadRecentInput) window.forgeShifts += entry.value;
        }
    });
    window.forgeShiftObserver.observe({type: "layout-shift"});
}"""


def test_the_process_view_draws_the_seat_tree(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    page = desktop.new_page()
    page.goto(f"{supervised.url}#/seat/acme/proj/procs/terminal")
    expect(page.locator("[data-role]")).to_have_attribute("data-role", "controller")
    page.locator(".term").click()
    page.keyboard.type("sleep 107\n")
    expect(page.locator("[data-terminal-state]")).to_have_attribute(
        "data-terminal-state", "running"
    )
    page.get_by_role("tab", name="processes").click()
    rows = page.locator("table.processes tbody tr")
    expect(rows.filter(has_text="sleep 107")).to_have_count(1)
    shell = rows.first  # parents first: the shell, then its child one level in
    expect(shell).not_to_contain_text("sleep")
    indent = (
        rows.filter(has_text="sleep 107")
        .locator(".cmd")
        .evaluate("(cell) => parseFloat(getComputedStyle(cell).paddingLeft)")
    )
    assert indent > shell.locator(".cmd").evaluate(
        "(cell) => parseFloat(getComputedStyle(cell).paddingLeft)"
    )
    expect(page.locator("table.processes thead")).to_contain_text("cpu %")
    expect(page.locator("table.processes thead")).to_contain_text("memory")


def test_every_view_fits_a_360_px_phone(
    browser: Browser, supervised: Supervised, colour_page: str
) -> None:
    context = browser.new_context(**NARROW)
    supervised.pair(context)
    try:
        page = context.new_page()
        open_tab(page, supervised, f"{colour_page}?narrow", "narrow")
        for route in ("", "#/settings", *(f"#/seat/acme/proj/narrow/{pane}" for pane in (
            "terminal", "browser", "processes"))):  # fmt: skip
            page.goto(f"{supervised.url}{route}")
            expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")
            page.wait_for_load_state("networkidle")
            width = page.evaluate("() => document.documentElement.scrollWidth")
            assert width <= 360, (route, width)
            if "terminal" in route:  # the keys row scrolls inside itself; Ctrl is on screen
                expect(page.locator('[data-key="ctrl"]')).to_be_in_viewport()
    finally:
        context.close()


def test_nothing_moves_when_output_or_frames_arrive(
    desktop: BrowserContext, supervised: Supervised, colour_page: str
) -> None:
    page = desktop.new_page()
    page.goto(f"{supervised.url}#/seat/acme/proj/still/terminal")
    expect(page.locator("[data-role]")).to_have_attribute("data-role", "controller")
    page.evaluate(SHIFTS_JS)
    page.locator(".term").click()
    page.keyboard.type("sleep 1; seq 1 3000; echo fini''shed\n")  # output after the input window
    wait_for_screen(page, r"^finished$")
    assert page.evaluate("() => window.forgeShifts") < NO_SHIFT

    open_tab(page, supervised, f"{colour_page}?still", "still")
    wait_for_colour(page, "blue")
    page.evaluate(SHIFTS_JS)
    drawn = page.evaluate("() => window.forgeBrowser.drawn")
    page.locator("canvas.page").click()
    wait_for_colour(page, "red")
    poll(page, "(drawn) => window.forgeBrowser.drawn > drawn", drawn)
    assert page.evaluate("() => window.forgeShifts") < NO_SHIFT


LONG_TITLE = "a title many times longer than the first one was"


def test_a_tab_that_retitles_itself_moves_nothing_beside_it(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    """A tab's width is its own, not its title's: pages retitle themselves whenever they like
    (the colour page on a click, a chat on a message), and the strip's buttons stay put."""
    page = desktop.new_page()
    with (
        served(page_of(b"<title>short</title>")) as short,
        served(page_of(f"<title>{LONG_TITLE}</title>".encode())) as long,
    ):
        open_tab(page, supervised, short, "retitled")
        tab = page.get_by_role("tablist", name="tabs").get_by_role("tab", selected=True)
        expect(tab).to_have_text("short")
        beside = page.get_by_label("new tab")
        before = (tab.bounding_box(), beside.bounding_box())
        address = page.get_by_label("address")
        address.fill(long)
        address.press("Enter")
        expect(tab).to_have_text(LONG_TITLE)
        assert (tab.bounding_box(), beside.bounding_box()) == before
