"""The terminal pane's own controls in a real browser: a hidden page pauses and comes back to a
fresh view (its perf records written beside forge.log first), copy, font size, a finger scrolling
the scrollback."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import BrowserContext, Page, expect

from .conftest import Supervised, poll, screen_text, wait_for_screen
from .routing import routed, wait_until

HIDE_JS = """(hidden) => {
    Object.defineProperty(document, "visibilityState", {
        configurable: true, get: () => (hidden ? "hidden" : "visible"),
    });
    document.dispatchEvent(new Event("visibilitychange"));
}"""
TERM_JS = """() => {
    const term = window.forgeTerminal.term, buffer = term.buffer.active;
    const size = term.options.fontSize;
    return {size, cols: term.cols, top: buffer.viewportY, base: buffer.baseY};
}"""


def open_seat(page: Page, supervised: Supervised, label: str) -> None:
    page.goto(f"{supervised.url}#/seat/acme/proj/{label}/terminal")
    expect(page.locator("[data-role]")).to_have_attribute("data-role", "controller")


def perf_records(supervised: Supervised) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for path in supervised.root.rglob("forge-perf-web.log"):
        lines += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return lines


def test_a_hidden_page_pauses_flushes_its_perf_and_returns_to_a_fresh_view(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    page = desktop.new_page()
    links = routed(page)
    open_seat(page, supervised, "away")
    page.locator(".term").click()
    page.keyboard.type("echo one\n")
    wait_for_screen(page, r"^one$")
    page.evaluate(HIDE_JS, True)
    link = links[0]
    wait_until(page, lambda: {"kind": "terminal_pause", "paused": True} in link.sent)
    wait_until(page, lambda: "client_perf" in link.kinds())
    wait_until(
        page,
        lambda: any(r["record"]["name"] == "keystroke_paint" for r in perf_records(supervised)),
    )

    other = desktop.new_page()
    other.goto(f"{supervised.url}#/seat/acme/proj/away/terminal")
    expect(other.locator("[data-role]")).to_have_attribute("data-role", "watcher")
    other.get_by_role("button", name="Take control").click()
    expect(other.locator("[data-role]")).to_have_attribute("data-role", "controller")
    other.locator(".term").click()
    other.keyboard.type("echo while-away\n")
    wait_for_screen(other, r"^while-away$")
    assert "while-away" not in screen_text(page).replace("echo while-away", "")

    page.evaluate(HIDE_JS, False)
    wait_until(page, lambda: {"kind": "terminal_pause", "paused": False} in link.sent)
    wait_for_screen(page, r"^while-away$")


def test_copy_takes_the_screen_and_font_size_sticks(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    desktop.grant_permissions(["clipboard-read", "clipboard-write"], origin=supervised.url)
    page = desktop.new_page()
    open_seat(page, supervised, "copy")
    page.locator(".term").click()
    page.keyboard.type("echo copied-$((6*7))\n")
    wait_for_screen(page, r"^copied-42$")
    page.get_by_role("button", name="Copy").click()
    expect(page.get_by_text("copied the screen")).to_be_visible()
    assert "copied-42" in page.evaluate("() => navigator.clipboard.readText()")

    before = page.evaluate(TERM_JS)
    page.get_by_role("button", name="larger text").click()
    page.get_by_role("button", name="larger text").click()
    poll(page, f"(size) => ({TERM_JS})().size === size", before["size"] + 2)
    poll(page, f"(cols) => ({TERM_JS})().cols < cols", before["cols"])
    page.reload()
    expect(page.locator("[data-role]")).to_have_attribute("data-role", "controller")
    poll(page, f"(size) => ({TERM_JS})().size === size", before["size"] + 2)


def test_a_finger_scrolls_the_scrollback(phone: BrowserContext, supervised: Supervised) -> None:
    page = phone.new_page()
    open_seat(page, supervised, "scroll")
    page.locator(".ime").tap()
    page.keyboard.type("seq 1 300\n")
    wait_for_screen(page, r"^300$")
    at_rest = page.evaluate(TERM_JS)
    assert at_rest["top"] == at_rest["base"] > 0
    box = page.locator(".ime").bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 4
    cdp = phone.new_cdp_session(page)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    for step in range(1, 11):  # a finger drags down: older lines come into view
        point = {"x": x, "y": y + step * 30}
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [point]})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    poll(page, f"(base) => ({TERM_JS})().top < base - 5", at_rest["base"])
    assert page.evaluate(TERM_JS)["base"] == at_rest["base"]  # nothing was typed


COUNT_JS = """(glyph) => {
    // Every byte of `glyph` the page hands to xterm.js from now on, views and chunks alike.
    const term = window.forgeTerminal.term, write = term.write.bind(term);
    const code = glyph.charCodeAt(0);
    window.glyphs = 0;
    term.write = (data, callback) => {
        if (typeof data === "string") window.glyphs += data.split(glyph).length - 1;
        else for (const byte of data) window.glyphs += byte === code;
        write(data, callback);
    };
}"""
FLOOD_LINES = 25_000
"""Lines of 79 `Z` and a newline: 2,000,000 bytes, four times what the shell may run ahead of the
page's parse."""


def test_a_flood_the_page_cannot_parse_in_time_is_paced_by_its_acks_and_loses_nothing(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    """The controller's page, slowed four times, tells the server how far it has parsed
    (`terminal_ack`, every 64 KiB), which paces the shell: every byte arrives, no fresh view
    replaced any (a watcher would pause instead)."""
    page = desktop.new_page()
    links = routed(page)
    open_seat(page, supervised, "flood")
    page.locator(".term").click()
    page.keyboard.type(f"yes $(printf '%079d' 0 | tr 0 Z) | head -c {FLOOD_LINES * 80}; echo E''ND")
    wait_for_screen(page, r"E''ND$")
    page.evaluate(COUNT_JS, "Z")
    desktop.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": 4})
    page.keyboard.press("Enter")
    wait_for_screen(page, r"^END$")
    acks = [message["seq"] for message in links[0].sent if message["kind"] == "terminal_ack"]
    assert len(acks) >= FLOOD_LINES * 80 // (2 * 64 * 1024)  # each past 64 KiB and a chunk
    assert acks == sorted(set(acks))  # each further than the last
    assert "terminal_pause" not in links[0].kinds()
    assert page.evaluate("() => window.glyphs") == FLOOD_LINES * 79
