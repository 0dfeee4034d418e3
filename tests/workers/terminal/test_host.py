"""The terminal host as a real worker process: frames, views, summaries, close, crash."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil
import pyte
import pytest

from forge.ipc.errors import RequestFailed
from forge.ipc.manager import WorkerHandle, WorkerManager
from forge.ipc.messages import StreamFrame
from forge.ipc.policy import LifecycleTimings
from forge.ipc.protocol import BAD_REQUEST, call
from forge.ptyinput import PtyInput
from forge.testing.vtscreen import TerminalScreen
from forge.wire.binary import TERMINAL_OUTPUT_HEADER
from forge.wire.terminal import TerminalSummary
from forge.workers.terminal.protocol import (
    OUTPUT_STREAM,
    TERMINAL,
    Close,
    Flow,
    Resize,
    Resized,
    View,
    Viewed,
    read_output_meta,
)

pytestmark = pytest.mark.timeout(180)
"""A bound for a hung host, not a measurement: the 100,000-line flood below takes 6 s at load
average 10 and took over 60 s at 25, with the full suite and a chaos hour beside it."""

TIMINGS = LifecycleTimings(hello_timeout=30.0, request_timeout=30.0, kill_grace=0.5)
BASH = ["/bin/bash", "--noprofile", "--norc", "-i"]


@pytest.fixture
async def manager(forge_dirs: dict[str, Path]) -> AsyncIterator[WorkerManager]:
    async with WorkerManager(timings=TIMINGS) as running:
        yield running


class Viewer:
    """What the supervisor receives from one host: output bytes by seq, and summaries."""

    def __init__(self, handle: WorkerHandle) -> None:
        self.seqs: list[int] = []
        self.chunks: dict[int, bytes] = {}
        self.summaries: list[TerminalSummary] = []
        self.ended: str | None = None
        self.keys: PtyInput | None = None
        """The PTY master the host lent, written as the supervisor writes keystrokes."""
        self._changed = asyncio.Event()
        handle.subscribe(OUTPUT_STREAM, self.on_frame, self.on_end)

    def type(self, keys: bytes) -> None:
        assert self.keys is not None
        assert self.keys.write(keys)

    def on_frame(self, frame: StreamFrame) -> None:
        meta = read_output_meta(frame.meta)
        if isinstance(meta, TerminalSummary):
            self.summaries.append(meta)
        else:
            _, _, seq = TERMINAL_OUTPUT_HEADER.unpack_from(frame.payload)
            assert seq == meta  # the typed metadata is the frame's own seq
            self.seqs.append(seq)
            self.chunks[seq] = bytes(frame.payload[TERMINAL_OUTPUT_HEADER.size :])
        self._changed.set()

    def on_end(self, stream_id: str, reason: str) -> None:
        self.ended = reason
        if self.keys is not None:
            self.keys.close()  # as the supervisor does: the shell sees its PTY hang up
        self._changed.set()

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks[seq] for seq in self.seqs)

    def after(self, seq: int) -> bytes:
        return b"".join(self.chunks[s] for s in self.seqs if s > seq)

    async def until(self, check: Any) -> None:
        while not check():
            self._changed.clear()
            await self._changed.wait()

    async def wait_for(self, text: bytes, count: int = 1) -> None:
        await self.until(lambda: self.data.count(text) >= count)

    async def wait_state(self, **fields: Any) -> TerminalSummary:
        def matches() -> bool:
            return bool(self.summaries) and all(
                getattr(self.summaries[-1], k) == v for k, v in fields.items()
            )

        await self.until(matches)
        return self.summaries[-1]


async def start_host(
    manager: WorkerManager, tmp_path: Path, name: str = "terminal-1", **config: Any
) -> tuple[WorkerHandle, Viewer]:
    env = {"PS1": "$ ", "HOME": str(tmp_path)}
    settings = {"terminal": 1, "cwd": str(tmp_path), "argv": BASH, **config}
    handle = manager.start(TERMINAL.spec(name, config=settings, env=env))
    viewer = Viewer(handle)
    await handle.wait_for(lambda row: row.state == "ready", 30.0)
    master = handle.borrow()
    assert master is not None, "the host lends its PTY master before it is ready"
    viewer.keys = PtyInput(master)
    return handle, viewer


def gone(pid: int) -> bool:
    """Exited (a zombie nobody reaped yet counts: it runs nothing)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def screen_of(view: Viewed, *after: bytes) -> TerminalScreen:
    screen = TerminalScreen(view.cols, view.rows)
    stream = pyte.ByteStream(screen)
    stream.feed(view.screen.encode())
    for data in after:
        stream.feed(data)
    return screen


async def test_muted_the_host_sends_no_frames_but_its_screen_follows_and_the_newest_decision_wins(
    manager: WorkerManager, tmp_path: Path
) -> None:
    handle, viewer = await start_host(manager, tmp_path)
    await viewer.wait_for(b"$ ")
    assert (await call(handle, Flow(muted=True, epoch=2))).muted is True
    older = await call(handle, Flow(muted=False, epoch=1))
    assert older.muted is True  # decided before the mute: it arrived late, ignored
    last_sent = viewer.seqs[-1]
    viewer.type(b"echo hidden-$((6*7))\r")

    async def screen_shows(text: str) -> Viewed:
        while True:
            view = await call(handle, View())
            if text in "\n".join(screen_of(view).display):
                return view
            await asyncio.sleep(0.01)

    view = await screen_shows("hidden-42")
    assert view.seq > last_sent
    assert viewer.seqs[-1] == last_sent
    assert (await call(handle, Flow(muted=False, epoch=3))).muted is False
    viewer.type(b"echo shown-$((6*7))\r")
    await viewer.wait_for(b"shown-42")
    assert all(seq > view.seq for seq in viewer.seqs if seq > last_sent)
    assert b"hidden-42" not in viewer.data


async def test_output_frames_view_and_state_words(manager: WorkerManager, tmp_path: Path) -> None:
    handle, viewer = await start_host(manager, tmp_path)
    await viewer.wait_for(b"$ ")
    await viewer.wait_state(state="idle", alive=True)
    viewer.type(b"printf 'hello %s\\n' world\r")
    await viewer.wait_for(b"hello world")
    view = await call(handle, View())
    assert view.seq <= viewer.seqs[-1]
    screen = screen_of(view, viewer.after(view.seq))
    assert "hello world" in "\n".join(screen.display)
    assert viewer.seqs == list(range(1, len(viewer.seqs) + 1))

    viewer.type(b"sleep 1\r")
    running = await viewer.wait_state(state="running")
    assert running.source == "process"
    await viewer.wait_state(state="idle")

    viewer.type(b"read -s -p 'Password: ' secret\r")
    await viewer.wait_state(state="password", source="termios")
    viewer.type(b"hunter2\r")
    await viewer.wait_state(state="idle")
    assert b"hunter2" not in viewer.data

    viewer.type(b"printf '\\033]2;my title\\007'; cd /tmp\r")
    summary = await viewer.wait_state(title="my title", cwd="/tmp")
    assert summary.id == 1
    assert summary.held is False


async def test_a_second_viewer_mid_stream_draws_the_same_screen(
    manager: WorkerManager, tmp_path: Path
) -> None:
    handle, viewer = await start_host(manager, tmp_path, cols=40, rows=10)
    await viewer.wait_for(b"$ ")
    viewer.type(b"seq 1 100000; echo DONE\r")
    await viewer.wait_for(b"50000")
    mid = await call(handle, View())
    await viewer.wait_for(b"DONE\r\n")
    await viewer.wait_for(b"$ ", 2)
    final = await call(handle, View())
    first = screen_of(Viewed(seq=0, screen="", cols=40, rows=10), viewer.data)
    late = screen_of(mid, viewer.after(mid.seq))
    assert late.display == first.display
    assert screen_of(final, viewer.after(final.seq)).display == first.display
    assert first.display[-2].strip() == "DONE"


async def test_alternate_screen_and_modes_in_the_view(
    manager: WorkerManager, tmp_path: Path
) -> None:
    (tmp_path / "file.txt").write_text("".join(f"line {n}\n" for n in range(200)))
    handle, viewer = await start_host(manager, tmp_path)
    await viewer.wait_for(b"$ ")
    viewer.type(b"less file.txt\r")
    await viewer.wait_for(b"line 20")
    view = await call(handle, View())
    screen = screen_of(view, viewer.after(view.seq))
    assert screen.in_alternate
    assert screen.display[0].startswith("line 0")
    viewer.type(b"q")
    await viewer.wait_for(b"$ ", 2)
    view = await call(handle, View())
    screen = screen_of(view, viewer.after(view.seq))
    assert not screen.in_alternate
    assert "less file.txt" in screen.display[0]


async def test_resize_applies_to_pty_and_screen(manager: WorkerManager, tmp_path: Path) -> None:
    handle, viewer = await start_host(manager, tmp_path)
    await viewer.wait_for(b"$ ")
    assert await call(handle, Resize(cols=100, rows=30)) == Resized(cols=100, rows=30)
    viewer.type(b"stty size\r")
    await viewer.wait_for(b"30 100")
    view = await call(handle, View())
    assert (view.cols, view.rows) == (100, 30)
    with pytest.raises(RequestFailed, match=r"<= 500 - at `\$\.cols`") as refused:
        await handle.request("resize", {"cols": 501, "rows": 30})
    assert refused.value.code == BAD_REQUEST


async def test_a_malformed_request_is_refused_naming_its_field(
    manager: WorkerManager, tmp_path: Path
) -> None:
    handle, viewer = await start_host(manager, tmp_path)
    with pytest.raises(RequestFailed) as refused:
        await handle.request("resize", {"cols": "x", "rows": 30})
    assert refused.value.code == BAD_REQUEST
    assert "`$.cols`" in refused.value.message
    with pytest.raises(RequestFailed) as unknown:
        await handle.request("flow", {"paused": True, "speed": 2})
    assert unknown.value.code == BAD_REQUEST
    assert "speed" in unknown.value.message
    await viewer.wait_for(b"$ ")
    assert (await call(handle, View())).cols == 80  # the host serves on


async def test_every_byte_before_exit_then_the_exit_summary(
    manager: WorkerManager, tmp_path: Path
) -> None:
    handle, viewer = await start_host(manager, tmp_path)
    await viewer.wait_for(b"$ ")
    viewer.type(b"head -c 500000 /dev/zero | tr '\\0' Q; exit 7\r")
    summary = await viewer.wait_state(alive=False)
    assert summary.state == "exited"
    assert summary.exit_status == 7
    assert viewer.data.count(b"Q") == 500000 + 1  # the echoed command holds one Q
    assert (await call(handle, Close())).exit_status == 7


async def start_job(handle: WorkerHandle, viewer: Viewer, command: bytes) -> int:
    """Start `command &` in the shell; the job's pid."""
    await viewer.wait_for(b"$ ")
    viewer.type(command + b" & echo JOB=$!\r")
    await viewer.until(lambda: re.search(rb"JOB=(\d+)\r\n", viewer.data) is not None)
    return int(re.findall(rb"JOB=(\d+)\r\n", viewer.data)[0])


async def test_close_kills_the_shell_and_its_jobs(manager: WorkerManager, tmp_path: Path) -> None:
    handle, viewer = await start_host(manager, tmp_path)
    job = await start_job(handle, viewer, b"sleep 999")
    result = await call(handle, Close())
    assert result.exit_status > 128
    assert viewer.summaries[-1].alive is False
    assert gone(job)
    await handle.stop()


async def test_a_shells_jobs_do_not_outlive_it(manager: WorkerManager, tmp_path: Path) -> None:
    """Issue 13, item 6: `sleep 777 &` then `exit`: the job goes with the shell's session."""
    handle, viewer = await start_host(manager, tmp_path)
    job = await start_job(handle, viewer, b"sleep 777")
    viewer.type(b"exit\r")
    await viewer.wait_state(alive=False)
    # `close` after the shell's own exit answers once what it left in its session is gone.
    assert (await call(handle, Close())).exit_status == 0
    assert gone(job)
    await handle.stop()


async def test_a_killed_host_ends_the_stream_and_takes_only_its_shell(
    manager: WorkerManager, tmp_path: Path
) -> None:
    first, first_viewer = await start_host(manager, tmp_path, "terminal-1")
    _, second_viewer = await start_host(manager, tmp_path, "terminal-2", terminal=2)
    await first_viewer.wait_for(b"$ ")
    await second_viewer.wait_for(b"$ ")
    shell = first_viewer.summaries[-1].pid
    assert first.pid is not None
    os.kill(first.pid, signal.SIGKILL)
    await first_viewer.until(lambda: first_viewer.ended is not None)
    assert first_viewer.ended == "worker_crashed"
    await first.stop()
    second_viewer.type(b"echo still here\r")
    await second_viewer.wait_for(b"still here\r\n")
    while not gone(shell):  # noqa: ASYNC110 - the shell is not our child: no event to await
        await asyncio.sleep(0.01)


def screen_model_pids(host_pid: int) -> set[int]:
    """The host's screen model processes (node running screen_model.cjs)."""
    return {
        child.pid
        for child in psutil.Process(host_pid).children()
        if any("screen_model.cjs" in part for part in child.cmdline())
    }


async def test_a_killed_screen_model_is_rebuilt_and_a_viewer_still_sees_the_true_screen(
    manager: WorkerManager, tmp_path: Path
) -> None:
    """The node process behind the host's screen is SIGKILLed mid-session: the host rebuilds it
    from its last view and what was written since, so a viewer attaching later is drawn what
    the shell wrote before the death and after it (before: a blank screen)."""
    handle, viewer = await start_host(manager, tmp_path)
    await viewer.wait_for(b"$ ")
    viewer.type(b"for n in 1 2 3; do echo before-$n; done\r")
    await viewer.wait_for(b"before-3\r\n")
    first = await call(handle, View())
    assert "before-3" in "\n".join(screen_of(first, viewer.after(first.seq)).display)
    assert handle.pid is not None
    (killed,) = screen_model_pids(handle.pid)
    os.kill(killed, signal.SIGKILL)
    viewer.type(b"echo after-$((6*7))\r")
    await viewer.wait_for(b"after-42\r\n")
    view = await call(handle, View())
    shown = "\n".join(screen_of(view, viewer.after(view.seq)).display)
    for line in ("before-1", "before-2", "before-3", "after-42"):
        assert line in shown, f"{line} is missing from the view after the model was killed"
    assert screen_model_pids(handle.pid) - {killed}, "no new screen model runs"
    await handle.stop()


async def titled(viewer: Viewer, start: str) -> str:
    """The first title the summaries carry that starts with `start`."""
    await viewer.until(lambda: any(s.title.startswith(start) for s in viewer.summaries))
    return next(s.title for s in viewer.summaries if s.title.startswith(start))


async def test_a_title_with_controls_reaches_the_summary_cleaned(
    manager: WorkerManager, tmp_path: Path
) -> None:
    """A program's OSC 0 title carries C0/C1 controls and bidirectional overrides: the summary
    clients get has them removed, and the host's view re-emits the title cleaned too."""
    handle, viewer = await start_host(manager, tmp_path)
    await viewer.wait_for(b"$ ")
    viewer.type(b"printf '\\e]0;a\\x07b\\e[31m\\a'\r")
    await viewer.wait_state(title="a")
    viewer.type(b"printf '\\e]2;pay\\xe2\\x80\\xaelive\\xc2\\x9b\\x08me\\a'\r")
    assert (await titled(viewer, "pay")) == "payliveme"
    viewer.type(b"printf '\\e]2;Pay\\xe2\\x80\\xaelive\\xe2\\x81\\xa6\\a'\r")
    assert (await titled(viewer, "Pay")) == "Paylive"
    view = await call(handle, View())
    assert "\x1b]2;Paylive\x07" in view.screen
    await handle.stop()
