"""The page's link, seen from the wire: the socket is routed through Playwright, which records
what the page sends and can drop the link, swallow the server's answers (a half-open socket) or
rewrite the greeting (a new server build). Time is Playwright's clock where the page waits."""

from __future__ import annotations

import json
import re
from typing import Any

from playwright.sync_api import BrowserContext, Page, WebSocketRoute, expect

from .conftest import Supervised, open_terminal, wait_for_screen

NEW_BUILD = "9.9.9 \u00b7 newbuild"


class Link:
    """One routed socket: what the page sent on it, and switches over what the server says."""

    def __init__(self, route: WebSocketRoute, new_build: bool) -> None:
        self.route = route
        self.url = route.url
        self.sent: list[dict[str, Any]] = []
        self.pongs = 0
        self.deaf = False
        """True: nothing the server says reaches the page any more (a half-open socket)."""
        self.server = route.connect_to_server()
        route.on_message(self.from_page)
        self.server.on_message(lambda message: self.from_server(message, new_build))

    def from_page(self, message: str | bytes) -> None:
        if isinstance(message, str):
            self.sent.append(json.loads(message))
        self.server.send(message)

    def from_server(self, message: str | bytes, new_build: bool) -> None:
        if self.deaf:
            return
        if new_build and isinstance(message, str) and message.startswith('{"kind":"greeting"'):
            greeting = json.loads(message)
            greeting["forge_version"] = NEW_BUILD
            message = json.dumps(greeting)
        self.pongs += message == '{"kind":"pong"}'
        self.route.send(message)

    def kinds(self) -> list[str]:
        return [str(message["kind"]) for message in self.sent]


def routed(page: Page) -> list[Link]:
    """Every socket the page opens from now on, in order; links after the first see a new build."""
    links: list[Link] = []
    page.route_web_socket(
        re.compile(r"/socket"), lambda route: links.append(Link(route, new_build=bool(links)))
    )
    return links


def wait_until(page: Page, check: Any) -> None:
    """Let the page run until `check()` (read on this side) holds."""
    for _ in range(600):
        if check():
            return
        page.wait_for_timeout(50)
    raise AssertionError("the page never did it")


def test_a_dropped_link_redials_re_holds_the_seat_and_tells_of_a_new_build(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    page = desktop.new_page()
    links = routed(page)
    open_terminal(page, supervised)
    first = links[0]
    view = next(m for m in first.sent if m["kind"] == "terminal_view")
    assert "id" not in view  # the seat's door: the page opens its shell
    first.route.close(code=1001, reason="dropped by the test")
    first.server.close()
    expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")
    expect(page.locator("[data-notice=build-changed]")).to_contain_text("9.9.9")
    expect(page.locator("[data-role]")).to_have_attribute("data-role", "controller")
    second = links[1]
    kinds = second.kinds()
    # Home first, then only the seat on screen, its terminal by id, and `showing` again.
    assert second.sent[0] == {"kind": "subscribe", "what": "home"}, kinds
    seat = {"org": "acme", "project": "proj", "label": "lead"}
    assert {"kind": "subscribe", "what": {"session": seat}} in second.sent, second.sent
    assert {"kind": "showing", "seat": seat} in second.sent, second.sent
    again = next(m for m in second.sent if m["kind"] == "terminal_view")
    assert isinstance(again.get("id"), int), again
    assert kinds.count("subscribe") == 2, kinds
    page.locator(".term").click()
    page.keyboard.type("echo relinked\n")
    wait_for_screen(page, r"^relinked$")


def test_a_quiet_link_is_probed_and_a_silent_one_redialled(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    page = desktop.new_page()
    page.clock.install()
    links = routed(page)
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
