"""A real Chromium host per test module, and the pages it visits, served on 127.0.0.1."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from forge.workers.browser.host import BrowserHost, HostSettings

from .harness import DOWNLOAD_BODY, PAGES, Recorder
from .socket_harness import serving


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/report":
            body, kind = DOWNLOAD_BODY, "application/octet-stream"
        elif self.path in PAGES:
            body, kind = PAGES[self.path].encode(), "text/html; charset=utf-8"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test's assertions say what happened."""


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """The test pages on 127.0.0.1, as a base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def hosted(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[tuple[BrowserHost, Recorder]]:
    """One Chromium shared by a module's tests; each test opens its own tabs."""
    recorder = Recorder()
    settings = HostSettings(profile_id=3, profile_dir=tmp_path_factory.mktemp("profile"))
    host = BrowserHost(settings, recorder.event, recorder.frame)
    await host.start()
    yield host, recorder
    await host.stop()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def served(
    tmp_path_factory: pytest.TempPathFactory, site: str
) -> AsyncIterator[tuple[str, Path]]:
    """A supervisor serving the browser verbs on a real socket, and its log, per test module."""
    async with serving(tmp_path_factory.mktemp("served")) as url_and_log:
        yield url_and_log
