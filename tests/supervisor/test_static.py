"""The web client's files on the socket's port: the pure answers, then real requests."""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import http
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from forge.config import load_config, page_url
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.server import SocketServer
from forge.supervisor.socket.static import (
    CONTENT_SECURITY_POLICY,
    IMMUTABLE,
    NO_CACHE,
    StaticSite,
    accepts_gzip,
    make_asset,
)

JS = b"console.log('forge');\n" * 50
SITE = StaticSite(
    {
        "/": make_asset("index.html", b"<!doctype html><title>forge</title>", immutable=False),
        "/assets/app-ABCDEFGH.js": make_asset("app-ABCDEFGH.js", JS, immutable=True),
        "/assets/logo-ABCDEFGH.png": make_asset("logo-ABCDEFGH.png", b"\x89PNG", immutable=True),
    }
)


def header(headers: list[tuple[str, str]], name: str) -> str | None:
    return next((value for key, value in headers if key.lower() == name.lower()), None)


def test_the_page_is_not_cached_and_hashed_assets_are_immutable() -> None:
    page = SITE.answer("GET", "/", {})
    assert page.status == http.HTTPStatus.OK
    assert header(page.headers, "Content-Type") == "text/html; charset=utf-8"
    assert header(page.headers, "Cache-Control") == NO_CACHE
    script = SITE.answer("GET", "/assets/app-ABCDEFGH.js?v=1", {})
    assert header(script.headers, "Content-Type") == "text/javascript; charset=utf-8"
    assert header(script.headers, "Cache-Control") == IMMUTABLE
    assert script.body == JS
    assert SITE.answer("GET", "/index.html", {}).body == page.body


def test_every_answer_carries_the_strict_policy() -> None:
    for answer in (SITE.answer("GET", "/", {}), SITE.answer("GET", "/nope", {})):
        policy = header(answer.headers, "Content-Security-Policy")
        assert policy == CONTENT_SECURITY_POLICY
        assert header(answer.headers, "X-Content-Type-Options") == "nosniff"
    directives = dict(d.split(" ", 1) for d in CONTENT_SECURITY_POLICY.split("; "))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"
    assert directives["connect-src"] == "'self'"


def test_gzip_only_when_the_request_accepts_it_and_it_pays() -> None:
    plain = SITE.answer("GET", "/assets/app-ABCDEFGH.js", {"accept-encoding": "br"})
    assert header(plain.headers, "Content-Encoding") is None
    packed = SITE.answer("GET", "/assets/app-ABCDEFGH.js", {"accept-encoding": "gzip, br"})
    assert header(packed.headers, "Content-Encoding") == "gzip"
    assert gzip.decompress(packed.body) == JS
    assert header(packed.headers, "Content-Length") == str(len(packed.body))
    assert header(packed.headers, "Vary") == "Accept-Encoding"
    image = SITE.answer("GET", "/assets/logo-ABCDEFGH.png", {"accept-encoding": "gzip"})
    assert header(image.headers, "Content-Encoding") is None


@pytest.mark.parametrize(
    ("accept", "gzip_ok"),
    [
        (None, False),
        ("", False),
        ("gzip", True),
        ("GZIP;q=0.5", True),
        ("gzip;q=0", False),
        ("br, *", True),
        ("*;q=0, gzip;q=1", True),
        ("gzip;q=0, *", False),
        ("identity", False),
        ("gzip;q=nonsense", False),
    ],
)
def test_accept_encoding(accept: str | None, gzip_ok: bool) -> None:
    assert accepts_gzip(accept) is gzip_ok


def test_unknown_paths_head_and_other_methods() -> None:
    missing = SITE.answer("GET", "/../etc/passwd", {})
    assert missing.status == http.HTTPStatus.NOT_FOUND
    assert header(missing.headers, "Content-Type") == "text/plain; charset=utf-8"
    head = SITE.answer("HEAD", "/assets/app-ABCDEFGH.js", {})
    assert head.status == http.HTTPStatus.OK
    assert head.body == b""
    assert header(head.headers, "Content-Length") == str(len(JS))
    post = SITE.answer("POST", "/", {})
    assert post.status == http.HTTPStatus.METHOD_NOT_ALLOWED
    assert header(post.headers, "Allow") == "GET, HEAD"


def test_a_matching_etag_is_not_modified() -> None:
    etag = header(SITE.answer("GET", "/", {}).headers, "ETag")
    assert etag is not None
    again = SITE.answer("GET", "/", {"if-none-match": etag})
    assert again.status == http.HTTPStatus.NOT_MODIFIED
    assert again.body == b""


def test_the_packaged_bundle_names_only_files_it_has() -> None:
    site = StaticSite.load()
    page = site.answer("GET", "/", {}).body.decode()
    named = re.findall(r'(?:src|href)="(/assets/[^"]+)"', page)
    assert {name.rsplit(".", 1)[-1] for name in named} == {"js", "css"}
    for name in named:
        assert site.answer("GET", name, {}).status == http.HTTPStatus.OK
        assert re.search(r"-[A-Z0-9]{8}\.(js|css)$", name), name


@pytest.mark.parametrize(
    ("bind", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:8790/"),
        ("0.0.0.0", "http://127.0.0.1:8790/"),
        ("::", "http://[::1]:8790/"),
        ("::1", "http://[::1]:8790/"),
    ],
)
def test_the_printed_page_url(bind: str, url: str, tmp_path: Path) -> None:
    defaults = load_config(tmp_path / "absent.toml").config.server
    assert page_url(dataclasses.replace(defaults, bind=bind, port=8790)) == url


# --- real requests on the socket's port ---------------------------------------------------------


@pytest.fixture
async def served(forge_dirs: dict[str, Path], free_port: int, tmp_path: Path) -> AsyncIterator[int]:
    config = tmp_path / "forge.toml"
    config.write_text("", encoding="utf-8")
    supervisor = Supervisor(load_config(config, overrides={"server.port": free_port}))
    socket = SocketServer(supervisor)
    await socket.start()
    yield free_port
    await socket.close()
    await supervisor.shutdown()


async def fetch(port: int, request: str) -> tuple[str, dict[str, str], bytes]:
    """One raw HTTP request; the server closes after a non-upgrade answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request.encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status, *lines = head.decode().split("\r\n")
    headers = {
        name.lower(): value for name, _, value in (line.partition(": ") for line in lines if line)
    }
    size = int(headers.get("content-length", "0"))
    body = await reader.readexactly(size) if not request.startswith("HEAD") else b""
    writer.close()
    await writer.wait_closed()
    return status, headers, body


async def test_the_page_and_its_assets_are_served_beside_the_socket(served: int) -> None:
    status, headers, body = await fetch(
        served, "GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n"
    )
    assert status == "HTTP/1.1 200 OK"
    assert headers["content-encoding"] == "gzip"
    assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    page = gzip.decompress(body).decode()
    script = re.search(r'src="(/assets/[^"]+\.js)"', page)
    assert script is not None
    status, headers, body = await fetch(served, f"GET {script[1]} HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == "HTTP/1.1 200 OK"
    assert headers["cache-control"] == IMMUTABLE
    assert headers["content-type"] == "text/javascript; charset=utf-8"
    assert len(body) == int(headers["content-length"]) > 10_000
    status, headers, _ = await fetch(served, f"HEAD {script[1]} HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == "HTTP/1.1 200 OK"
    assert int(headers["content-length"]) == len(body)
    status, _, body = await fetch(served, "GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == "HTTP/1.1 404 Not Found"
    assert body == b"Not Found\n"
