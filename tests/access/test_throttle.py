"""Floods of wrong tokens against a real socket: the right token is admitted at once through any
of them, no answer is ever a 500, and `/token-check` answers forge's own page and native callers
only. Time is a `ManualClock` the tests move, so "at once" means "without the clock moving"."""

from __future__ import annotations

import asyncio
import base64
import os
import secrets
from collections import Counter
from collections.abc import Awaitable

import pytest
from websockets.asyncio.client import connect

from forge.access.throttle import Backoff
from forge.access.token import read_token
from forge.client.auth import subprotocols
from forge.client.connection import connect as forge_connect
from forge.client.errors import TokenRefused
from forge.testing.clock import ManualClock

from .conftest import Serve, Served

RULES = Backoff()
FLOOD_S = 120.0
"""Only how long a flood may take before the test fails instead of hanging (no threshold)."""


def upgrade(served: Served, token: str | None, headers: dict[str, str] | None = None) -> bytes:
    offered = "forge.v1" if token is None else f"forge.v1, forge.token.{token}"
    key = base64.b64encode(os.urandom(16)).decode()
    return request(
        served,
        "/socket",
        {
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Key": key,
            "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Protocol": offered,
            **(headers or {}),
        },
    )


def token_check(served: Served, token: str | None, headers: dict[str, str] | None = None) -> bytes:
    bearer = {} if token is None else {"Authorization": f"Bearer {token}"}
    return request(served, "/token-check", {**bearer, **(headers or {})})


def request(served: Served, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"GET {path} HTTP/1.1", f"Host: {served.host}:{served.port}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


Link = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def answer(served: Served, sent: bytes, link: Link | None = None) -> bytes:
    """The head of the server's answer (status line and headers), and nothing more is read."""
    reader, writer = link or await asyncio.open_connection(served.host, served.port)
    writer.write(sent)
    try:
        return await reader.readuntil(b"\r\n\r\n")
    finally:
        writer.transport.abort()


async def status(served: Served, sent: bytes, link: Link | None = None) -> int:
    return int((await answer(served, sent, link)).split()[1])


async def links(served: Served, count: int) -> list[Link]:
    """`count` open connections, dialled one after another: dials made at once can lose their
    SYN (here a second passes before it is sent again), which the floods must not wait on."""
    return [await asyncio.open_connection(served.host, served.port) for _ in range(count)]


def wrong(served: Served, n: int) -> bytes:
    """The n-th wrong guess: upgrades and token checks in turn (both count against the peer)."""
    guess = secrets.token_urlsafe(32)
    return upgrade(served, guess) if n % 2 else token_check(served, guess)


async def past_its_hold(clock: ManualClock, attempt: Awaitable[int]) -> int:
    """The attempt's status, moving the clock past the cap whenever one more thing sleeps on
    it than before the attempt began (its refusal held)."""
    before = clock.sleepers
    task = asyncio.ensure_future(attempt)
    while not task.done():
        if clock.sleepers > before:
            clock.advance(RULES.cap_s)
        await asyncio.sleep(0)
    return task.result()


async def admitted_at_once(served: Served) -> None:
    """The right token, by upgrade (greeted) and by token check (204), with the clock still."""
    async with connect(served.url, subprotocols=subprotocols()) as ws:
        assert '"kind":"greeting"' in str(await ws.recv())
    assert await status(served, token_check(served, read_token())) == 204


async def test_two_thousand_refusals_in_a_row_leave_the_right_token_admitted_at_once(
    serve: Serve,
) -> None:
    clock = ManualClock()
    served = await serve(clock=clock)
    flood = 2000  # 2.0 ** (n - 1) overflowed at the 1026th and every answer was then a 500
    async with asyncio.timeout(FLOOD_S):
        statuses = Counter(
            [await past_its_hold(clock, status(served, wrong(served, n))) for n in range(flood)]
        )
    assert statuses == {401: flood}
    await admitted_at_once(served)
    refused = served.records("socket_auth_refused")
    assert (refused[-1]["strikes"], refused[-1]["wait_s"]) == (flood, RULES.cap_s)
    assert [r["wait_s"] for r in refused[:6]] == [0.25, 0.5, 1.0, 2.0, 4.0, 4.0]


async def test_floods_of_parallel_refusals_leave_the_right_token_admitted_at_once(
    serve: Serve,
) -> None:
    clock = ManualClock()
    served = await serve(clock=clock)
    parallel, rounds = 500, 4
    for _ in range(rounds):
        opened = await links(served, parallel)  # then every guess is sent at once
        flood = [
            asyncio.ensure_future(status(served, wrong(served, n), link))
            for n, link in enumerate(opened)
        ]
        async with asyncio.timeout(FLOOD_S):
            shed, waiting = await answered(flood, parallel - RULES.held)
        assert Counter(task.result() for task in shed) == {429: parallel - RULES.held}
        await admitted_at_once(served)  # while the peer's quota of refusals still waits
        assert not any(task.done() for task in waiting)
        clock.advance(RULES.cap_s)
        assert Counter(await asyncio.gather(*waiting)) == {401: RULES.held}
    assert served.records("socket_auth_refused")[-1]["strikes"] == parallel * rounds


async def answered(
    tasks: list[asyncio.Future[int]], count: int
) -> tuple[list[asyncio.Future[int]], list[asyncio.Future[int]]]:
    """Wait until `count` of `tasks` are done: those, and the rest."""
    done: list[asyncio.Future[int]] = []
    pending = set(tasks)
    while len(done) < count:
        finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        done += finished
    return done, list(pending)


async def test_a_refusal_past_the_quota_is_429_at_once_and_says_when_to_retry(
    serve: Serve,
) -> None:
    clock = ManualClock()
    served = await serve(clock=clock)
    before = clock.sleepers
    held = [asyncio.ensure_future(status(served, token_check(served, "x"))) for _ in range(4)]
    async with asyncio.timeout(FLOOD_S):
        while clock.sleepers < before + RULES.held:  # noqa: ASYNC110 - the four refusals held
            await asyncio.sleep(0)
    head = await answer(served, upgrade(served, "y" * 43))
    assert head.startswith(b"HTTP/1.1 429 ")
    assert b"\r\nRetry-After: 1\r\n" in head  # the first hold ends 0.25 s from now
    with pytest.raises(TokenRefused, match=r"refused the token given \(HTTP 429\)"):
        async with forge_connect(served.url, token="y" * 43):
            pass
    await admitted_at_once(served)
    clock.advance(RULES.cap_s)
    assert await asyncio.gather(*held) == [401] * RULES.held
    shed = served.records("socket_auth_refused")[-1]
    assert (shed["answer"], shed["wait_s"], shed["strikes"]) == (429, 0.0, 6)


async def test_a_token_check_from_another_page_is_403_before_the_token_is_read(
    serve: Serve,
) -> None:
    served = await serve()
    token = read_token()
    for headers in (
        {"Origin": "https://evil.example"},
        {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "cross-site"},  # an <img> or a no-cors fetch: no Origin sent
        {"Sec-Fetch-Site": "same-site"},
        {"Origin": "null"},
    ):
        assert await status(served, token_check(served, token, headers)) == 403
        assert await status(served, token_check(served, "wrong", headers)) == 403
    refused = served.records("socket_origin_refused")
    assert {r["path"] for r in refused} == {"/token-check"}
    assert refused[4] == refused[4] | {"origin": None, "fetch_site": "cross-site"}
    assert not served.records("socket_auth_refused")  # none of them was a strike
    own = {"Origin": f"http://{served.host}:{served.port}", "Sec-Fetch-Site": "same-origin"}
    assert await status(served, token_check(served, token, own)) == 204
    assert await status(served, token_check(served, token)) == 204  # curl, forge's clients
    assert await status(served, token_check(served, token, {"Sec-Fetch-Site": "none"})) == 204
