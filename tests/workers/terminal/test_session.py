"""Real shells on real PTYs: every byte arrives, sizes apply, probes see commands and passwords."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from forge.workers.terminal.batcher import Frame
from forge.workers.terminal.session import PtySession, ShellSpec, ShellUnavailable

pytestmark = pytest.mark.timeout(30)

BASH = ("/bin/bash", "--noprofile", "--norc", "-i")


class Output:
    """Frames as they leave the session, and a way to await text in them."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []
        self.data = bytearray()
        self.exit: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._changed = asyncio.Event()

    def on_frames(self, frames: list[Frame]) -> None:
        for frame in frames:
            self.frames.append(frame)
            self.data += frame.data
        self._changed.set()

    def on_exit(self, status: int) -> None:
        self.exit.set_result(status)

    async def wait_for(self, text: bytes, count: int = 1) -> None:
        while self.data.count(text) < count:
            self._changed.clear()
            await self._changed.wait()


async def until(condition: Callable[[], bool]) -> None:
    """Poll a condition no event reports (the kernel's PTY buffer)."""
    while not condition():  # noqa: ASYNC110 - the kernel sends no event for these
        await asyncio.sleep(0.005)


def spec(tmp_path: Path, *argv: str, cols: int = 80, rows: int = 24) -> ShellSpec:
    env = {"PATH": os.environ["PATH"], "TERM": "xterm-256color", "PS1": "$ ", "HOME": str(tmp_path)}
    return ShellSpec(argv, tmp_path, cols, rows, env)


async def start(shell: ShellSpec) -> tuple[PtySession, Output]:
    output = Output()
    session = await PtySession.start(shell, 7, output.on_frames, output.on_exit)
    return session, output


async def test_every_byte_before_exit_arrives_in_order(tmp_path: Path) -> None:
    command = "head -c 300000 /dev/zero | tr '\\0' Q; printf END; exit 3"
    session, output = await start(spec(tmp_path, "/bin/sh", "-c", command))
    assert await output.exit == 3
    assert output.data.count(b"Q") == 300000
    assert output.data.endswith(b"END")
    assert [f.seq for f in output.frames] == list(range(1, len(output.frames) + 1))
    assert all(f.wire[1:3] == (7).to_bytes(2, "little") for f in output.frames)
    assert await session.close() == 3


async def test_paused_reading_holds_the_shell_and_loses_nothing(tmp_path: Path) -> None:
    command = "head -c 200000 /dev/zero | tr '\\0' Q; exit 0"
    output = Output()
    session = await PtySession.start(
        spec(tmp_path, "/bin/sh", "-c", command), 1, output.on_frames, output.on_exit
    )
    session.pause_reading("controller")
    await until(lambda: session.unread() > 0)
    seen = len(output.data)
    await until(lambda: session.unread() >= 4095)
    assert len(output.data) == seen
    assert not output.exit.done()
    session.resume_reading("controller")
    assert await output.exit == 0
    assert output.data.count(b"Q") == 200000
    await session.close()


async def test_the_tail_of_a_flood_goes_out_by_its_deadline_while_the_shell_runs_on(
    tmp_path: Path,
) -> None:
    # 300000 bytes are four full 64 KiB frames and a partial batch; after a flood that batch is
    # not interactive, so only the batch deadline can release it while `sleep` keeps the PTY
    # quiet and the shell alive.
    command = "head -c 300000 /dev/zero | tr '\\0' Q; sleep 30"
    session, output = await start(spec(tmp_path, "/bin/sh", "-c", command))
    await until(lambda: output.data.count(b"Q") == 300000)
    assert session.alive
    assert len(output.frames) >= 5
    await session.close()


async def test_resize_reaches_the_program(tmp_path: Path) -> None:
    session, output = await start(spec(tmp_path, *BASH))
    await output.wait_for(b"$ ")
    session.resize(100, 30)
    os.write(session.master_fd, b"stty size\r")
    await output.wait_for(b"30 100")
    await session.close()


async def test_probe_sees_a_command_and_a_password_prompt(tmp_path: Path) -> None:
    session, output = await start(spec(tmp_path, *BASH))
    await output.wait_for(b"$ ")
    at_prompt = session.probe()
    assert at_prompt is not None
    assert at_prompt.foreground_pgid == session.pid
    os.write(session.master_fd, b"read -s -p 'Password: ' secret\r")
    await output.wait_for(b"Password: ")

    def password_wanted() -> bool:
        probe = session.probe()
        return probe is not None and (probe.echo, probe.canonical) == (False, True)

    await until(password_wanted)
    os.write(session.master_fd, b"hunter2\r")
    await output.wait_for(b"$ ", 2)
    os.write(session.master_fd, b"sleep 5\r")

    def sleep_in_front() -> bool:
        probe = session.probe()
        group = probe.foreground_pgid if probe is not None else None
        return group not in (None, session.pid) and psutil.Process(group).name() == "sleep"

    await until(sleep_in_front)
    await session.close()


async def test_close_kills_background_jobs_and_exit_reports_a_status(tmp_path: Path) -> None:
    session, output = await start(spec(tmp_path, *BASH))
    await output.wait_for(b"$ ")
    os.write(session.master_fd, b"sleep 999 & echo JOB=$!\r")
    await output.wait_for(b"$ ", 2)
    await until(lambda: re.search(rb"JOB=(\d+)\r\n", output.data) is not None)
    job = int(re.findall(rb"JOB=(\d+)\r\n", output.data)[0])
    assert psutil.pid_exists(job)
    status = await session.close()
    assert status > 128
    assert not session.alive
    gone = not psutil.pid_exists(job) or psutil.Process(job).status() == psutil.STATUS_ZOMBIE
    assert gone


async def test_a_missing_directory_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ShellUnavailable, match="does not exist"):
        await start(spec(tmp_path / "nope", "/bin/sh"))
