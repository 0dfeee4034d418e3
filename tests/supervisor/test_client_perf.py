"""`client_perf {records}`: a page's records land in forge-perf-web.log, rolled once."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from forge.client.auth import subprotocols
from forge.config import load_config
from forge.supervisor.socket import client_perf
from forge.supervisor.socket.client_perf import MAX_RECORDS, PERF_LOG, PerfLog
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.server import SocketServer
from forge.testing.supervised import ask


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_records_are_json_lines_and_the_file_rolls_once(tmp_path: Path) -> None:
    path = tmp_path / PERF_LOG
    log = PerfLog(path, max_bytes=400)
    assert not path.exists()  # created on the first record
    for n in range(20):
        log.write("127.0.0.1:1", 1000 + n, [{"name": "keystroke_paint", "ms": n}])
    log.close()
    rolled = tmp_path / f"{PERF_LOG}.1"
    assert sorted(p.name for p in tmp_path.iterdir()) == [PERF_LOG, f"{PERF_LOG}.1"]
    newest = lines(path)[-1]
    assert newest == {
        "at_ms": 1019,
        "peer": "127.0.0.1:1",
        "record": {"name": "keystroke_paint", "ms": 19},
    }
    assert all(row["record"]["name"] == "keystroke_paint" for row in lines(rolled))  # type: ignore[index]


def test_a_batch_is_bounded(tmp_path: Path) -> None:
    log = PerfLog(tmp_path / PERF_LOG)
    assert log.write("p", 1, [{"n": n} for n in range(MAX_RECORDS + 5)]) == MAX_RECORDS
    assert log.write("p", 1, [{"big": "x" * 10_000}]) == 1
    log.close()
    oversized = lines(tmp_path / PERF_LOG)[-1]
    assert set(oversized) == {"at_ms", "peer", "dropped"}  # its size, not its contents
    assert oversized["dropped"] > 10_000  # type: ignore[operator]


@pytest.fixture
async def served(
    forge_dirs: dict[str, Path], free_port: int, tmp_path: Path
) -> AsyncIterator[Path]:
    config = tmp_path / "forge.toml"
    config.write_text("", encoding="utf-8")
    supervisor = Supervisor(load_config(config, overrides={"server.port": free_port}))
    path = tmp_path / "logs" / PERF_LOG
    client_perf.install(supervisor, path)
    socket = SocketServer(supervisor)
    await socket.start()
    yield path
    await socket.close()
    await supervisor.shutdown()


async def test_a_batch_from_the_socket_is_written_and_not_answered(
    served: Path, free_port: int
) -> None:
    async with connect(f"ws://127.0.0.1:{free_port}/socket", subprotocols=subprotocols()) as client:
        await client.recv(), await client.recv()
        records = [{"name": "reconnect", "ms": 812.5, "at_ms": 5}, {"name": "frame_decode"}]
        await client.send(json.dumps({"kind": "client_perf", "records": records}))
        # Handled in arrival order: the snapshot is the first frame after the batch.
        answer = await ask(client, {"kind": "subscribe", "what": "usage"})
        assert answer["kind"] == "snapshot"
    written = lines(served)
    assert [row["record"] for row in written] == records
    assert written[0]["peer"].startswith("127.0.0.1:")  # type: ignore[union-attr]


def test_the_log_sits_beside_forge_log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FORGE_LOG_FILE", str(tmp_path / "here" / "forge.log"))
    assert client_perf.perf_log_path() == tmp_path / "here" / PERF_LOG
