"""A test's web page for a seat's tab: one HTML body served from a local port, quietly.

    with served(page_of(b"<body>hi</body>")) as url:
        ...  # a tab navigated to `url` shows it

Benchmarks that keep the server across awaits use `serve_in_thread` and stop it themselves.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class OnePage(BaseHTTPRequestHandler):
    """Answers every GET with `body()`: its `BODY` unless a page computes one from the path."""

    BODY = b""

    def body(self) -> bytes:
        return self.BODY

    def do_GET(self) -> None:
        body = self.body()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def page_of(html: bytes) -> type[OnePage]:
    """A page class serving `html`."""
    return type("Page", (OnePage,), {"BODY": html})


def serve_in_thread(page: type[OnePage]) -> tuple[ThreadingHTTPServer, str]:
    """`page` served on a free local port from a daemon thread: the server (`shutdown()` it)
    and the URL of its root."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


@contextmanager
def served(page: type[OnePage], path: str = "/") -> Iterator[str]:
    """`page` served while the block runs; yields the URL of `path`."""
    server, root = serve_in_thread(page)
    try:
        yield root.rstrip("/") + path
    finally:
        server.shutdown()
        server.server_close()
