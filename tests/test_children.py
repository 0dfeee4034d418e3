"""forge.children: a process's end learned from a pidfd, and group signals that never raise."""

from __future__ import annotations

import asyncio
import signal

import pytest

from forge.children import ExitWatch, signal_group


async def test_a_watch_tells_once_that_a_process_exited() -> None:
    child = await asyncio.create_subprocess_exec(
        "sh", "-c", "read line; exit 7", stdin=asyncio.subprocess.PIPE
    )
    told: list[int] = []
    exited = asyncio.Event()
    ExitWatch(child.pid, lambda: (told.append(child.pid), exited.set()))
    assert child.stdin is not None
    child.stdin.close()  # the child ends only now, after the watch is armed
    await exited.wait()
    assert await child.wait() == 7  # the watch never reaps: the owner gets the status
    assert told == [child.pid]


async def test_a_closed_watch_tells_nothing() -> None:
    child = await asyncio.create_subprocess_exec("sleep", "30")
    told: list[int] = []
    watch = ExitWatch(child.pid, lambda: told.append(1))
    watch.close()
    watch.close()
    child.kill()
    await child.wait()
    await asyncio.sleep(0)
    assert told == []


async def test_a_reaped_process_cannot_be_watched() -> None:
    child = await asyncio.create_subprocess_exec("true")
    await child.wait()
    with pytest.raises(ProcessLookupError):
        ExitWatch(child.pid, print)


async def test_a_group_signal_reaches_the_group_and_a_gone_group_is_no_error() -> None:
    leader = await asyncio.create_subprocess_exec("sleep", "30", start_new_session=True)
    assert signal_group(leader.pid, signal.SIGKILL)
    assert await leader.wait() == -signal.SIGKILL
    assert not signal_group(leader.pid, signal.SIGKILL)
