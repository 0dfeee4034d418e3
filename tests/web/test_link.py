"""The page's link, seen from the wire: the socket is routed through Playwright, which records
what the page sends and can drop the link, swallow the server's answers (a half-open socket) or
rewrite the greeting (a new server build). Time is Playwright's clock where the page waits."""

from __future__ import annotations

from playwright.sync_api import BrowserContext, expect

from .conftest import Supervised, open_terminal, poll, wait_for_screen
from .routing import routed, wait_until


def test_a_dropped_link_redials_re_holds_the_seat_and_tells_of_a_new_build(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    page = desktop.new_page()
    links = routed(page, new_build=True)
    open_terminal(page, supervised)
    first = links[0]
    view = next(m for m in first.sent if m["kind"] == "terminal_view")
    assert "id" not in view  # the seat's door: the page opens its shell
    first.route.close(code=1001, reason="dropped by the test")
    first.server.close()
    expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")
    expect(page.locator("[data-notice=build-changed]")).to_contain_text("9.9.9")
    expect(page.locator("[data-role]")).to_have_attribute("data-role", "controller")
    assert page.locator(".notices .banner").all_inner_texts() == []  # nothing sent out of turn
    second = links[1]
    # Playwright hands the page's messages to this side a little after the page sent them.
    wait_until(page, lambda: {"showing", "terminal_view"} <= set(second.kinds()))
    kinds = second.kinds()
    # Home first, then only the seat on screen, its terminal by id, and `showing` again.
    assert second.sent[0] == {"kind": "subscribe", "what": "home"}, kinds
    seat = {"org": "acme", "project": "proj", "label": "lead"}
    held = {"kind": "subscribe", "what": {"session": seat}, "answering": True}
    assert held in second.sent, second.sent
    assert {"kind": "showing", "seat": seat} in second.sent, second.sent
    again = next(m for m in second.sent if m["kind"] == "terminal_view")
    assert isinstance(again.get("id"), int), again
    assert kinds.count("subscribe") == 2, kinds
    # Typed before the fresh view arrives, keys would meet a page still opening (it drops them).
    poll(page, "() => window.forgeTerminal.surface.phase === 'live'")
    page.locator(".term").click()
    page.keyboard.type("echo relinked\n")
    wait_for_screen(page, r"^relinked$")


def test_a_quiet_link_is_probed_and_a_silent_one_redialled(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    page = desktop.new_page()
    page.clock.install()
    links = routed(page, new_build=True)
    page.goto(supervised.url)
    expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")
    first = links[0]
    page.clock.run_for(14_000)
    assert "ping" not in first.kinds()
    page.clock.run_for(2_000)
    wait_until(page, lambda: first.pongs == 1)  # asked, and answered
    # The socket goes half-open: the page hears nothing, not even a close.
    first.deaf = True
    page.clock.run_for(16_000)
    assert first.kinds().count("ping") == 2, first.kinds()
    assert len(links) == 1
    page.clock.run_for(66_000)  # the probe's deadline, then the backoff's first delay
    expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")
    assert len(links) == 2
    assert links[1].sent[0] == {"kind": "subscribe", "what": "home"}
    expect(page.locator("[data-notice=build-changed]")).to_be_visible()


def test_a_reconnect_sends_nothing_as_a_viewer_before_its_view_and_shows_no_notice(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    """Issue 36, item 2: after every reconnect the page said "this connection is not viewing a
    terminal". The reconnecting banner moves the terminal (its rows change), and the page,
    still taking itself for attached, sent the new size on the new link before its view."""
    page = desktop.new_page()
    links = routed(page)
    open_terminal(page, supervised)
    poll(page, "() => window.forgeTerminal.surface.phase === 'live'")
    first = links[0]
    first.route.close(code=1001, reason="dropped by the test")
    first.server.close()
    expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")
    poll(page, "() => window.forgeTerminal.surface.phase === 'live'")
    page.locator(".term").click()
    page.keyboard.type("echo relinked\n")
    wait_for_screen(page, r"^relinked$")  # a round trip: a refusal would have arrived by now
    second = links[1]
    wait_until(page, lambda: "terminal_view" in second.kinds())
    kinds = second.kinds()
    as_viewer = {"terminal_resize", "terminal_ack", "terminal_pause", "terminal_control"}
    early = as_viewer & set(kinds[: kinds.index("terminal_view")])
    assert not early, f"sent before the view answered: {kinds}"
    assert page.locator(".notices .banner").all_inner_texts() == []
