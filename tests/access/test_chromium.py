"""A real Chromium on the TLS port: the web client in a secure context, the (fake) microphone,
and an upgrade from the page with the token `forge pair`'s URL carried; and `/token-check`, which
answers forge's own page but refuses a page on another site before reading any token."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from forge.access.tls import CertPair, leaf_der, self_signed, spki_hash
from forge.access.token import read_token

from .conftest import Serve

playwright = pytest.importorskip("playwright.async_api")

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="no Chromium at /usr/bin/chromium")
NAME = "forge.test"
"""A name that is not loopback to the browser (mapped to 127.0.0.2 by its resolver flag), so
the secure context is earned by TLS, not granted to localhost."""

OPEN_SOCKET = """
async ([url, offer, token]) => {
  const protocols = offer ? ["forge.v1", "forge.token." + token] : ["forge.v1"];
  const ws = new WebSocket(url, protocols);
  return await new Promise((resolve) => {
    ws.onmessage = (event) => {
      resolve({first: JSON.parse(event.data).kind, protocol: ws.protocol});
      ws.close();
    };
    ws.onclose = (event) => resolve({closed: event.code});
  });
}
"""

MICROPHONE = """
async () => {
  if (!navigator.mediaDevices) return "no mediaDevices";
  const stream = await navigator.mediaDevices.getUserMedia({audio: true});
  const tracks = stream.getAudioTracks().map((track) => track.kind);
  stream.getTracks().forEach((track) => track.stop());
  return tracks;
}
"""


@pytest.fixture
async def chromium(tmp_path: Path) -> AsyncIterator[tuple[object, CertPair]]:
    pair, _ = self_signed(
        CertPair(tmp_path / "c.pem", tmp_path / "k.pem"), [NAME, "127.0.0.2", "localhost"]
    )
    spki = spki_hash(leaf_der(pair.cert.read_bytes()))
    async with playwright.async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                f"--ignore-certificate-errors-spki-list={spki}",
                "--use-fake-device-for-media-stream",
                "--use-fake-ui-for-media-stream",
                f"--host-resolver-rules=MAP {NAME} 127.0.0.2",
            ],
        )
        try:
            yield browser, pair
        finally:
            await browser.close()


async def test_a_phone_page_over_tls_is_secure_and_reaches_the_microphone_and_socket(
    serve: Serve, chromium: tuple[object, CertPair]
) -> None:
    browser, pair = chromium
    served = await serve(
        f'[server]\ntls_cert = "{pair.cert}"\ntls_key = "{pair.key}"\n', host="127.0.0.2"
    )
    token = read_token()
    page = await browser.new_page()  # type: ignore[attr-defined]
    for host in ("127.0.0.2", NAME):
        response = await page.goto(f"https://{host}:{served.port}/#token={token}")
        assert response.status == 200  # the web client, served over TLS
        assert await page.evaluate("window.isSecureContext") is True
        assert await page.evaluate(MICROPHONE) == ["audio"]
    await page.goto(f"https://127.0.0.2:{served.port}/#token={token}")
    socket = f"wss://127.0.0.2:{served.port}/socket"
    assert await page.evaluate(OPEN_SOCKET, [socket, True, token]) == {
        "first": "greeting",
        "protocol": "forge.v1",
    }
    assert await page.evaluate(OPEN_SOCKET, [socket, False, token]) == {"closed": 1006}
    (refused,) = served.records("socket_auth_refused")
    assert refused["origin"] == f"https://127.0.0.2:{served.port}"
    assert token not in served.log.read_text(encoding="utf-8")


async def test_the_same_name_without_tls_has_no_microphone(
    serve: Serve, chromium: tuple[object, CertPair]
) -> None:
    browser, _ = chromium
    served = await serve(host="127.0.0.2")
    page = await browser.new_page()  # type: ignore[attr-defined]
    await page.goto(f"http://{NAME}:{served.port}/")
    assert await page.evaluate("window.isSecureContext") is False
    assert await page.evaluate(MICROPHONE) == "no mediaDevices"


TOKEN_CHECK = """
async ([token]) => (await fetch("/token-check", {
  headers: {Authorization: "Bearer " + token}, cache: "no-store"
})).status
"""

FROM_ELSEWHERE = """
async ([url]) => {
  await fetch(url, {mode: "no-cors", cache: "no-store"}).catch(() => null);
  await fetch(url, {headers: {Authorization: "Bearer guess"}}).catch(() => null);
  await new Promise((done) => {
    const image = new Image();
    image.onload = image.onerror = done;
    image.src = url + "?image";
  });
}
"""


@asynccontextmanager
async def elsewhere() -> AsyncIterator[str]:
    """Another site (`forge.test` on 127.0.0.2): one page, with nothing on it but its origin."""
    page = b"<!doctype html><title>elsewhere</title>"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(head + f"Content-Length: {len(page)}\r\n\r\n".encode() + page)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.2", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://{NAME}:{port}/"


async def test_token_check_answers_forges_own_page_and_no_other_site(
    serve: Serve, chromium: tuple[object, CertPair]
) -> None:
    browser, _ = chromium
    served = await serve()
    token = read_token()
    page = await browser.new_page()  # type: ignore[attr-defined]
    await page.goto(f"http://127.0.0.1:{served.port}/#token={token}")
    assert await page.evaluate(TOKEN_CHECK, [token]) == 204
    assert await page.evaluate(TOKEN_CHECK, ["guess"]) == 401
    assert len(served.records("socket_auth_refused")) == 1
    async with elsewhere() as url:
        await page.goto(url)
        await page.evaluate(FROM_ELSEWHERE, [f"http://127.0.0.1:{served.port}/token-check"])
    refused = served.records("socket_origin_refused")
    assert [(r["path"], r["origin"], r["fetch_site"]) for r in refused] == [
        ("/token-check", None, "cross-site"),  # a no-cors fetch carries no Origin
        ("/token-check", url.rstrip("/"), "cross-site"),  # the preflight of the one with a header
        ("/token-check", None, "cross-site"),  # nor does an image
    ]
    assert len(served.records("socket_auth_refused")) == 1  # no strike from the other site
