"""The page's socket routed through Playwright: what the page sends, recorded, and switches over
what the server says (a half-open socket, a new build in the greeting)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from playwright.sync_api import Page, WebSocketRoute

NEW_BUILD = "9.9.9 \u00b7 newbuild"


class Link:
    """One routed socket: what the page sent on it, and switches over what the server says."""

    def __init__(self, route: WebSocketRoute, new_build: bool) -> None:
        self.route = route
        self.url = route.url
        self.sent: list[dict[str, Any]] = []
        self.pongs = 0
        self.formats: list[int] = []
        """The picture format of each browser frame (kind 1) the server sent: 1 WebP, 2 JPEG."""
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
        if isinstance(message, bytes) and message[:1] == b"\x01" and len(message) > 13:
            self.formats.append(message[13])
        if new_build and isinstance(message, str) and message.startswith('{"kind":"greeting"'):
            greeting = json.loads(message)
            greeting["forge_version"] = NEW_BUILD
            message = json.dumps(greeting)
        self.pongs += message == '{"kind":"pong"}'
        self.route.send(message)

    def kinds(self) -> list[str]:
        return [str(message["kind"]) for message in self.sent]


def routed(page: Page, *, new_build: bool = False) -> list[Link]:
    """Every socket the page opens from now on, in order; with `new_build`, links after the first
    greet with another server build."""
    links: list[Link] = []
    page.route_web_socket(
        re.compile(r"/socket"),
        lambda route: links.append(Link(route, new_build=new_build and bool(links))),
    )
    return links


def wait_until(page: Page, check: Callable[[], bool]) -> None:
    """Let the page run until `check()`, read on this side (the wire as recorded), holds."""
    for _ in range(600):
        if check():
            return
        page.wait_for_timeout(50)
    raise AssertionError("the page never did it")
