"""The socket's transport rows (T01-T20): paths, origins, frames 1 and 2, bounds, shutdown."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidStatus

from forge.client.auth import subprotocols
from forge.testing.supervised import Start, ask, quiet

PROJECT = """
[[projects]]
org = "acme"
name = "proj"
path = "{path}"
"""


async def raw_request(port: int, request: str) -> bytes:
    """Send raw HTTP and read until the server closes or a full response head plus body arrives."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request.encode())
    await writer.drain()
    response = await reader.read(65536)
    writer.close()
    await writer.wait_closed()
    return response


def handshake(path: str, origin: str | None) -> str:
    lines = [
        f"GET {path} HTTP/1.1",
        "Host: 127.0.0.1",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        f"Sec-WebSocket-Protocol: {', '.join(subprotocols())}",
    ]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    return "\r\n".join(lines) + "\r\n\r\n"


async def test_greeting_then_settings_then_pong(supervise: Start) -> None:
    supervised = await supervise()
    client = await supervised.connect()
    await client.send('{"kind":"ping"}')
    frames = [json.loads(await client.recv()) for _ in range(3)]
    assert [f["kind"] for f in frames] == ["greeting", "settings", "pong"]
    greeting, settings, pong = frames
    assert set(greeting) == {"kind", "version", "forge_version", "forge_version_short", "settings"}
    assert greeting["version"] == 29
    version, _, sha = greeting["forge_version"].partition(" · ")
    assert greeting["forge_version_short"] == f"{version}+{sha}"
    assert set(greeting["settings"]) == {"mark", "theme", "font", "dictate"}
    assert set(greeting["settings"]["dictate"]) == {"styling", "structure", "context"}
    assert set(settings) == {"kind", "document"}
    assert settings["document"]["source"] == str(supervised.config)
    assert pong == {"kind": "pong"}


async def test_other_paths_are_404_and_plain_get_is_426(supervise: Start) -> None:
    supervised = await supervise()
    not_found = await raw_request(supervised.port, "GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n")
    assert not_found.startswith(b"HTTP/1.1 404")
    assert b"<html" not in not_found.lower()
    upgrade_less = await raw_request(supervised.port, "GET /socket HTTP/1.1\r\nHost: x\r\n\r\n")
    assert upgrade_less.startswith(b"HTTP/1.1 426")
    with_upgrade_elsewhere = await raw_request(supervised.port, handshake("/other", None))
    assert with_upgrade_elsewhere.startswith(b"HTTP/1.1 404")


async def test_a_refused_origin_gets_403_before_any_frame(supervise: Start) -> None:
    supervised = await supervise()
    response = await raw_request(supervised.port, handshake("/socket", "http://localhost.evil.com"))
    assert response.startswith(b"HTTP/1.1 403")
    assert b"greeting" not in response
    record = await supervised.record("socket_origin_refused")
    assert record["origin"] == "http://localhost.evil.com"
    assert record["peer"].startswith("127.0.0.1:")
    assert supervised.records("socket_opened") == []


ORIGINS_AT_THE_HANDSHAKE = [
    (None, 101),
    ("tauri://localhost", 101),
    ("https://tauri.localhost", 101),
    ("http://localhost:5173", 101),
    ("https://127.0.0.2", 101),
    ("http://[::1]:3000", 101),
    ("https://pages.example.org", 101),
    ("https://pages.example.org:8443", 403),
    ("http://[::1].evil.com", 403),
    ("null", 403),
]


async def test_origins_at_the_handshake(supervise: Start) -> None:
    supervised = await supervise('[server]\nallowed_origins = ["https://pages.example.org"]\n')
    for origin, status in ORIGINS_AT_THE_HANDSHAKE:
        response = await raw_request(supervised.port, handshake("/socket", origin))
        assert response.startswith(f"HTTP/1.1 {status}".encode()), origin


async def test_the_servers_own_origin_is_allowed(supervise: Start) -> None:
    supervised = await supervise()
    response = await raw_request(
        supervised.port, handshake("/socket", f"http://127.0.0.1:{supervised.port}")
    )
    assert response.startswith(b"HTTP/1.1 101")


async def test_a_bad_message_is_answered_and_the_socket_stays(supervise: Start) -> None:
    supervised = await supervise()
    client = await supervised.greeted()
    error = await ask(client, {"kind": "settings"})
    assert error == {
        "kind": "error",
        "what": "client_message",
        "why": "unknown kind `settings`",
        "seat": None,
        "dispatch_id": None,
    }
    await client.send("garbage")
    assert json.loads(await client.recv())["what"] == "client_message"
    await quiet(client)


async def test_binary_frames_a_client_may_not_send_get_no_answer(supervise: Start) -> None:
    supervised = await supervise()
    client = await supervised.greeted()
    for frame in (bytes([1]) + bytes(18), bytes([9]), bytes([0]) + bytes(16386), bytes([0, 0, 0])):
        await client.send(frame)
    await quiet(client)
    await supervised.record("socket_binary_dropped", reason="unknown binary kind 9")
    await supervised.record("socket_binary_dropped", reason="no take is open on this connection")
    reasons = {r["reason"] for r in supervised.records("socket_binary_dropped")}
    assert "kind 1 (browser_frame) is sent only by the server" in reasons
    assert "dictation payload of 16386 bytes exceeds 16384" in reasons


async def test_an_inbound_message_of_ten_mib_is_taken(supervise: Start) -> None:
    supervised = await supervise()
    client = await supervised.greeted()
    await client.send(json.dumps({"kind": "client_perf", "blob": "x" * (10_700 * 1024)}))
    await quiet(client)


async def test_an_inbound_message_over_16_mib_closes_with_1009(supervise: Start) -> None:
    supervised = await supervise()
    client = await supervised.greeted()
    await client.send(bytes([0]) + bytes(16 * 1024 * 1024))
    with pytest.raises(ConnectionClosed) as closed:
        await client.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1009


async def test_large_json_crosses_as_kind_3_on_deflate_connections_in_order(
    supervise: Start, tmp_path: Path
) -> None:
    supervised = await supervise(PROJECT.format(path=tmp_path))
    plain = await supervised.greeted()
    deflate = await supervised.greeted("?deflate=1")
    seat = {"org": "acme", "project": "proj", "label": "lead"}
    await ask(plain, {"kind": "drill_start_seat", "seat": seat})
    for client in (plain, deflate):
        snapshot = await ask(client, {"kind": "subscribe", "what": {"session": seat}})
        assert snapshot["kind"] == "snapshot"
    big_body = {"key": seat, "text": "x" * 70000}
    for body in (big_body, {"key": seat, "text": "small"}):
        await plain.send(
            json.dumps({"kind": "drill_seat_update", "seat": seat, "variant": "note", "body": body})
        )
    plain_big, plain_small = await plain.recv(), await plain.recv()
    deflated, deflate_small = await deflate.recv(), await deflate.recv()
    assert isinstance(plain_big, str)
    assert isinstance(deflated, bytes)
    assert deflated[0] == 3
    assert gzip.decompress(deflated[1:]).decode() == plain_big
    assert deflate_small == plain_small
    assert isinstance(deflate_small, str)


async def test_sigterm_closes_clients_with_1001_and_exits_0(supervise: Start) -> None:
    supervised = await supervise()
    client = await supervised.greeted()
    supervised.process.terminate()
    with pytest.raises(ConnectionClosed) as closed:
        await client.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1001
    assert await supervised.process.wait() == 0
    await supervised.record("supervisor_stopped")


async def test_a_config_that_does_not_load_exits_2_with_the_loaders_message(
    forge_dirs: dict[str, Path], tmp_path: Path
) -> None:
    config = tmp_path / "broken.toml"
    config.write_text('[server]\nport = "high"\n', encoding="utf-8")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "forge.cli", "supervise",
        env=dict(os.environ, FORGE_CONFIG=str(config)),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, stderr = await process.communicate()
    assert process.returncode == 2
    message = stderr.decode()
    assert str(config) in message
    assert "line 2" in message
    assert "port" in message


async def test_refused_handshake_status_is_visible_to_a_websockets_client(supervise: Start) -> None:
    supervised = await supervise()
    with pytest.raises(InvalidStatus) as refused:
        await supervised.connect(origin="https://evil.example")  # type: ignore[arg-type]
    assert refused.value.response.status_code == 403


async def frames_and_notices(client: ClientConnection) -> list[int | str]:
    """Read to `drill_done`: each kind-4 frame as its seq, each JSON notice as `overflow@seq`."""
    seen: list[int | str] = []
    while True:
        message = await client.recv()
        if isinstance(message, bytes):
            seen.append(struct.unpack_from("<BHI", message)[2])
            continue
        decoded = json.loads(message)
        if decoded["kind"] == "drill_done":
            return seen
        seen.append(f"overflow@{decoded['seq']}")


async def test_a_newer_frame_of_a_stream_supersedes_the_one_waiting(supervise: Start) -> None:
    """13 MiB in one burst: the socket takes what it can at once, the rest waits, and of what
    waits only the newest frame is sent."""
    supervised = await supervise()
    client = await supervised.greeted()
    request = {"kind": "drill_frames", "count": 200, "size": 65536, "policy": "latest"}
    await client.send(json.dumps(request))
    seen = await frames_and_notices(client)
    assert seen[-1] == 200
    assert len(seen) < 200
    assert seen == sorted(seen)
    assert seen[:-1] == list(range(1, len(seen)))  # what the socket took, then the newest


async def test_a_bounded_stream_past_one_mib_is_cut_and_its_owner_told(supervise: Start) -> None:
    """What the socket takes at once goes; past 1 MiB waiting, the waiting chunks are cut and the
    owner told (`overflow@seq`, the chunk that found the stream full, itself refused)."""
    supervised = await supervise()
    client = await supervised.greeted()
    request = {"kind": "drill_frames", "count": 200, "size": 65536, "policy": "bounded"}
    await client.send(json.dumps(request))
    seen = await frames_and_notices(client)
    notices = [int(item.split("@")[1]) for item in seen if isinstance(item, str)]
    frames = [item for item in seen if isinstance(item, int)]
    assert notices, seen
    assert frames == sorted(frames)
    assert not set(notices) & set(frames)
    # After the last cut every chunk arrives: at most 15 of 64 KiB wait under 1 MiB.
    tail = [seq for seq in frames if seq > notices[-1]]
    assert tail == list(range(notices[-1] + 1, 201))
    assert len(tail) <= 15


def test_the_supervise_verb_and_its_options() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "forge.cli", "supervise", "--help"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    for option in ("--config PATH", "--bind BIND", "--port PORT"):
        assert option in done.stdout
