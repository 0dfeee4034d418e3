"""A seat's browser tab in a real browser: frames drawn on the canvas, a tap that lands."""

from __future__ import annotations

from playwright.sync_api import BrowserContext, Page, expect

from .conftest import Supervised, poll

PIXEL_JS = """([fx, fy]) => {
    const canvas = document.querySelector("canvas.page");
    const x = Math.floor(canvas.width * fx), y = Math.floor(canvas.height * fy);
    const [r, g, b] = canvas.getContext("2d").getImageData(x, y, 1, 1).data;
    if (r > 200 && g < 60 && b < 60) return "red";
    if (r < 60 && g < 60 && b > 200) return "blue";
    return `${r},${g},${b}`;
}"""


def open_tab(page: Page, supervised: Supervised, url: str, label: str) -> None:
    """`url` in the seat's tab. With none open yet the address bar opens one; once the profile
    has tabs, a seat of its own views the first of them and the address bar navigates it (a
    viewed tab navigated: the path where a key frame capture Chromium never answered held every
    frame back)."""
    page.goto(f"{supervised.url}#/seat/acme/proj/{label}/browser")
    expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")
    address = page.get_by_label("address")
    address.fill(url)
    address.press("Enter")
    expect(page.locator(".browserpane [data-role]")).to_have_attribute("data-role", "controller")
    # The tab has left the page it showed (often another colour page, blue as well): a click
    # sent before the navigation commits lands on the old document.
    poll(
        page,
        """(url) => {
            const surface = window.forgeBrowser?.surface;
            const rows = surface?.tabs?.rows ?? [];
            return rows.some((row) => row.number === surface.tab && row.url === url);
        }""",
        url,
    )


def wait_for_colour(page: Page, colour: str) -> None:
    poll(
        page,
        f"(colour) => ({PIXEL_JS})([0.5, 0.5]) === colour",
        colour,
        describe=f"""() => ({{colour: ({PIXEL_JS})([0.5, 0.5]),
            drawn: window.forgeBrowser?.drawn, received: window.forgeBrowser?.received,
            tab: window.forgeBrowser?.surface.tab, rows: window.forgeBrowser?.surface.tabs?.rows,
            controls: window.forgeBrowser?.surface.controls,
            gestures: window.forgeBrowser?.surface.inputSeq,
            address: document.querySelector("[aria-label=address]")?.value,
            notices: [...document.querySelectorAll(".notices > *")].map((n) => n.innerText)}})""",
    )


def tap_turns_the_page_red(
    page: Page, supervised: Supervised, colour_page: str, touch: bool
) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    open_tab(page, supervised, colour_page, "phone" if touch else "desk")
    wait_for_colour(page, "blue")
    # A tap lands only once this seat controls the tab it shows (a take may still be on its way).
    expect(page.locator(".browserpane [data-role]")).to_have_attribute("data-role", "controller")
    canvas = page.locator("canvas.page")
    if touch:
        canvas.tap()
    else:
        canvas.click()
    wait_for_colour(page, "red")
    drawn = page.evaluate("() => [window.forgeBrowser.drawn, window.forgeBrowser.received]")
    assert 0 < drawn[0] <= drawn[1]
    assert errors == [], errors


def test_a_click_on_the_canvas_lands_in_the_tab(
    desktop: BrowserContext, supervised: Supervised, colour_page: str
) -> None:
    tap_turns_the_page_red(desktop.new_page(), supervised, colour_page, touch=False)


def test_a_phone_tap_lands_in_the_tab(
    phone: BrowserContext, supervised: Supervised, colour_page: str
) -> None:
    tap_turns_the_page_red(phone.new_page(), supervised, f"{colour_page}?phone", touch=True)


def test_a_resized_pane_redraws_the_last_frame_until_the_next(
    desktop: BrowserContext, supervised: Supervised, colour_page: str
) -> None:
    """Each resize redraws the frame already shown at the new size (the tab's next key frame
    takes a round trip): a second resize before that frame arrives must still have one to draw."""
    page = desktop.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    open_tab(page, supervised, colour_page, "resizer")
    wait_for_colour(page, "blue")
    page.evaluate(
        """async () => {
            const pane = document.querySelector(".browserpane");
            const painted = () =>
                new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
            for (const width of ["900px", "700px", "800px"]) {
                pane.style.width = width;
                await painted();  // the canvas's resize observer has run
            }
        }"""
    )
    wait_for_colour(page, "blue")
    assert errors == [], errors
