"""Real process trees in sessions of their own (as a terminal's shell is), and a walker worker."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from forge.ipc.manager import WorkerHandle, WorkerManager
from forge.workers.walker.protocol import WALKER

SESSION_SCRIPT = """
sleep 60 &
setsid sleep 61 &
(sleep 62 &)
echo ready
exec cat
"""
"""A session leader with a plain child, a child that moved to its own session, and an orphan
whose parent exited (still in the session): what a shell with background jobs looks like."""

Rows = list[dict[str, Any]]


@pytest.fixture
async def manager(forge_dirs: dict[str, Path]) -> AsyncIterator[WorkerManager]:
    async with WorkerManager() as running:
        yield running


@pytest.fixture
async def walker(manager: WorkerManager) -> WorkerHandle:
    return manager.start(WALKER.spec("walker"))


@pytest.fixture
async def session_leader() -> AsyncIterator[asyncio.subprocess.Process]:
    """`sh` leading its own session, its background jobs started (it printed `ready`)."""
    leader = await asyncio.create_subprocess_exec(
        "sh", "-c", SESSION_SCRIPT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    assert leader.stdout is not None
    assert await leader.stdout.readline() == b"ready\n"
    await until(lambda: _all_exec_d(leader.pid))
    yield leader
    for pid in _session_members(leader.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    await leader.wait()


def _session_members(sid: int) -> list[int]:
    """The session's processes and the child that moved away (still the leader's child: found
    by its parent, not by its command line, which another test's session shares)."""
    members = []
    for process in psutil.process_iter(["ppid"]):
        with contextlib.suppress(OSError):
            if process.info["ppid"] == sid or os.getsid(process.pid) == sid:
                members.append(process.pid)
    return members


def _all_exec_d(sid: int) -> bool:
    """Every background job runs `sleep` (none is still the shell's fork)."""
    found = set()
    for pid in _session_members(sid):
        with contextlib.suppress(OSError):
            found.add(Path(f"/proc/{pid}/cmdline").read_bytes())
    return {b"sleep\x0060\x00", b"sleep\x0061\x00", b"sleep\x0062\x00"} <= found


def commands(rows: Rows) -> list[list[str]]:
    return [row["cmdline"] for row in rows]


async def until(check: Callable[[], bool | Awaitable[bool]], *, within: float = 30.0) -> None:
    """Ask `check` again until it holds: for states that settle (a fork that has yet to exec)."""
    async with asyncio.timeout(within):
        while True:
            answer = check()
            if await answer if inspect.isawaitable(answer) else answer:
                return
            await asyncio.sleep(0.02)
