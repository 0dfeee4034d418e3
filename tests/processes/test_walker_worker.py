"""The walker worker with real process trees: sessions, escapees, orphans, refusals."""

from __future__ import annotations

import asyncio

import pytest

from forge.ipc.errors import RequestFailed
from forge.ipc.manager import WorkerHandle

from .conftest import Rows, commands, until


async def walk(walker: WorkerHandle, *groups: list[int]) -> list[Rows]:
    reply = await walker.request("walk", {"sessions": list(groups)})
    trees: list[Rows] = reply.result["trees"]
    return trees


async def test_a_session_is_walked_with_its_escapee_and_its_orphan(
    walker: WorkerHandle, session_leader: asyncio.subprocess.Process
) -> None:
    wanted = [["sleep", "60"], ["sleep", "61"], ["sleep", "62"]]
    rows: Rows = []

    async def all_exec_d() -> bool:
        nonlocal rows
        [rows] = await walk(walker, [session_leader.pid])
        return all(command in commands(rows) for command in wanted)

    await until(all_exec_d)
    by_command = {tuple(row["cmdline"]): row for row in rows}
    leader = rows[0]
    assert (leader["pid"], leader["cmdline"]) == (session_leader.pid, ["cat"])
    assert by_command[("sleep", "60")]["ppid"] == session_leader.pid
    assert by_command[("sleep", "61")]["ppid"] == session_leader.pid
    assert by_command[("sleep", "62")]["ppid"] != session_leader.pid
    for row in rows:
        assert set(row) == {
            "pid", "ppid", "name", "cmdline", "cpu_percent", "rss_bytes", "started_ms"
        }  # fmt: skip
        assert row["rss_bytes"] > 0
        assert row["started_ms"] > 1_600_000_000_000


async def test_groups_are_answered_in_order_and_a_gone_session_is_empty(
    walker: WorkerHandle, session_leader: asyncio.subprocess.Process
) -> None:
    gone, mine = await walk(walker, [2**22 + 1], [session_leader.pid])
    assert gone == []
    assert mine[0]["pid"] == session_leader.pid


async def test_cpu_is_the_share_since_the_previous_walk(walker: WorkerHandle) -> None:
    spinner = await asyncio.create_subprocess_exec(
        "sh", "-c", "while :; do :; done", start_new_session=True
    )
    try:
        [[first]] = await walk(walker, [spinner.pid])
        assert first["cpu_percent"] == 0.0

        async def busy() -> bool:
            [[row]] = await walk(walker, [spinner.pid])
            return bool(row["cpu_percent"] > 0.0)

        await until(busy)
    finally:
        spinner.kill()
        await spinner.wait()


async def test_a_malformed_walk_is_refused_and_the_walker_lives_on(walker: WorkerHandle) -> None:
    malformed = [None, {}, {"sessions": 5}, {"sessions": [5]}, {"sessions": [["5"]]}]
    for args in [*malformed, {"sessions": [[0]]}]:
        with pytest.raises(RequestFailed) as refused:
            await walker.request("walk", args)
        assert refused.value.code == "bad_request"
        assert refused.value.message.startswith("walk: ")
        assert "sessions" in refused.value.message
    assert await walk(walker) == []
