"""The token on every upgrade, against a real socket: 401 before any frame, the record, rotation."""

from __future__ import annotations

import asyncio
import base64
import os

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from forge.access.token import fingerprint, read_token, rotate_token, token_path
from forge.client.auth import subprotocols
from forge.client.connection import connect as forge_connect
from forge.client.errors import TokenRefused
from forge.testing.clock import ManualClock

from .conftest import Serve, Served

PAGE_ORIGIN = "http://localhost:5173"


async def raw_upgrade(served: Served, headers: dict[str, str]) -> bytes:
    """Everything the server sends back to one hand-written upgrade, until it closes."""
    reader, writer = await asyncio.open_connection(served.host, served.port)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        "GET /socket HTTP/1.1",
        f"Host: {served.host}:{served.port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    answer = await reader.read()
    writer.close()
    return answer


async def refusal(served: Served, **kwargs: object) -> int:
    with pytest.raises(InvalidStatus) as caught:
        await connect(served.url, **kwargs)  # type: ignore[arg-type]
    return caught.value.response.status_code


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="native-client"),
        pytest.param({"Origin": PAGE_ORIGIN}, id="page-origin"),
        pytest.param({"Sec-WebSocket-Protocol": "forge.v1"}, id="subprotocol-without-token"),
    ],
)
async def test_no_token_is_401_before_any_frame(serve: Serve, headers: dict[str, str]) -> None:
    served = await serve()
    answer = await raw_upgrade(served, headers)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 401 ")
    assert b"Sec-WebSocket-Accept" not in head
    assert body == b"This socket needs forge's token (forge pair, forge token show).\n"
    (record,) = served.records("socket_auth_refused")
    assert record["why"] == "missing"
    assert record["peer"].startswith("127.0.0.1:")
    assert record["origin"] == headers.get("Origin")


async def test_a_wrong_token_is_401_and_recorded(serve: Serve) -> None:
    served = await serve()
    assert await refusal(served, subprotocols=subprotocols("x" * 43)) == 401
    assert await refusal(served, subprotocols=subprotocols("")) == 401
    wrong = served.records("socket_auth_refused")
    assert [r["why"] for r in wrong] == ["wrong", "wrong"]
    assert not served.supervisor.connections


async def test_two_token_values_are_a_wrong_one(serve: Serve) -> None:
    served = await serve()
    token = read_token()
    assert token is not None
    offered = [*subprotocols(), *subprotocols("x" * 43)[1:]]
    assert await refusal(served, subprotocols=offered) == 401


async def test_the_right_token_is_greeted_and_the_subprotocol_selected(serve: Serve) -> None:
    served = await serve()
    async with connect(served.url, subprotocols=subprotocols()) as ws:
        assert ws.subprotocol == "forge.v1"
        assert '"kind":"greeting"' in str(await ws.recv())
    async with forge_connect(served.url) as connection:  # forge's client reads the state file
        assert connection.greeting.version > 0
    assert not served.records("socket_auth_refused")


async def test_a_page_origin_with_the_token_is_greeted(serve: Serve) -> None:
    served = await serve()
    async with connect(
        served.url,
        subprotocols=subprotocols(),
        origin=PAGE_ORIGIN,  # type: ignore[arg-type]
    ) as ws:
        assert '"kind":"greeting"' in str(await ws.recv())


async def test_the_token_file_is_private_and_made_on_first_start(serve: Serve) -> None:
    assert read_token() is None
    served = await serve()
    token = read_token()
    assert token is not None
    assert len(token) == 43
    assert token_path().stat().st_mode & 0o777 == 0o600
    (record,) = served.records("socket_token")
    assert record["fingerprint"] == fingerprint(token)


async def test_forge_client_says_the_token_was_refused(serve: Serve) -> None:
    served = await serve()
    with pytest.raises(TokenRefused, match="refused the token given"):
        async with forge_connect(served.url, token="y" * 43):
            pass


async def test_rotation_drops_old_connections_and_refuses_the_old_token(serve: Serve) -> None:
    served = await serve()
    old = read_token()
    assert old is not None
    ws = await connect(served.url, subprotocols=subprotocols())
    await ws.recv(), await ws.recv()
    new = rotate_token()
    assert await refusal(served, subprotocols=subprotocols(old)) == 401  # at once: read per upgrade
    await ws.wait_closed()
    assert (ws.close_code, ws.close_reason) == (1008, "token rotated")
    record = await served.record("socket_token_rotated", fingerprint=fingerprint(new))
    assert record["dropped"] == 1
    async with connect(served.url, subprotocols=subprotocols()) as fresh:
        assert '"kind":"greeting"' in str(await fresh.recv())


async def test_a_deleted_token_file_is_a_rotation(serve: Serve) -> None:
    served = await serve()
    old = read_token()
    token_path().unlink()
    assert await refusal(served, subprotocols=subprotocols(old)) == 401
    new = read_token()
    assert new is not None
    assert new != old
    async with connect(served.url, subprotocols=subprotocols(new)):
        pass


async def test_the_token_never_reaches_the_log(serve: Serve) -> None:
    served = await serve()
    old = read_token()
    assert old is not None
    async with connect(served.url, subprotocols=subprotocols()) as ws:
        await ws.recv()
    await refusal(served, subprotocols=subprotocols(old[::-1]))
    await refusal(served, origin="https://evil.example")  # type: ignore[arg-type]
    new = rotate_token()
    await refusal(served, subprotocols=subprotocols(old))
    await served.record("socket_token_rotated")
    text = served.log.read_text(encoding="utf-8")
    assert fingerprint(old) in text
    assert fingerprint(new) in text
    for secret in (old, new, old[::-1]):
        assert secret not in text


async def test_auth_none_on_loopback_greets_a_client_offering_nothing(serve: Serve) -> None:
    served = await serve('[server]\nauth = "none"\n')
    async with connect(served.url) as ws:
        assert ws.subprotocol is None
        assert '"kind":"greeting"' in str(await ws.recv())
    async with connect(served.url, subprotocols=subprotocols("anything")) as ws:
        assert ws.subprotocol == "forge.v1"
    assert read_token() is None


async def test_a_refusal_waits_out_the_backoff_and_the_right_token_does_not(serve: Serve) -> None:
    clock = ManualClock()
    served = await serve(clock=clock)
    first = asyncio.ensure_future(refusal(served, subprotocols=subprotocols("z" * 43)))
    held = await served.record("socket_auth_refused")
    assert (held["answer"], held["wait_s"], held["strikes"]) == (401, 0.25, 1)
    async with connect(served.url, subprotocols=subprotocols()) as ws:  # the clock has not moved
        assert '"kind":"greeting"' in str(await ws.recv())
    assert not first.done()
    clock.advance(0.25)
    assert await first == 401


async def test_the_watch_alone_drops_holders_of_a_rotated_token(serve: Serve) -> None:
    clock = ManualClock()
    served = await serve(clock=clock)
    ws = await connect(served.url, subprotocols=subprotocols())
    await ws.recv()
    rotate_token()  # nobody dials after it: only the once-a-second re-read can notice
    clock.advance(1.0)
    await ws.wait_closed()
    assert (ws.close_code, ws.close_reason) == (1008, "token rotated")


async def test_a_wildcard_bind_without_tls_says_who_can_connect_and_what_a_phone_lacks(
    serve: Serve,
) -> None:
    served = await serve(host="0.0.0.0")
    (warning,) = served.records("socket_without_tls")
    assert warning["level"] == "warning"
    assert "microphone" in warning["why"]
    assert warning["who"] == (
        "anyone who can reach this port on any of this machine's networks and holds the token"
    )
    assert served.records("socket_bind_wildcard")


async def test_loopback_raises_no_reach_warning(serve: Serve) -> None:
    served = await serve()
    assert not served.records("socket_without_tls")


async def test_a_request_that_is_no_upgrade_is_426_not_401(serve: Serve) -> None:
    served = await serve()
    reader, writer = await asyncio.open_connection(served.host, served.port)
    writer.write(b"GET /socket HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = await reader.read()
    writer.close()
    assert answer.startswith(b"HTTP/1.1 426 ")
    assert not served.records("socket_auth_refused")
