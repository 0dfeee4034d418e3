"""`forge attach` end to end: a real PTY on each side (ours and the terminal host's), a real
socket and supervisor in between. What is asserted is what the person sees on their terminal."""

from __future__ import annotations

import os
import signal

import psutil

from forge.client.connection import ForgeConnection, connect
from forge.client.frames import TerminalControl as ControlFrame
from forge.client.frames import Update
from forge.supervisor.socket.core import Supervisor
from forge.testing.supervised import Start
from forge.wire.client import TerminalClose, TerminalControl, TerminalView
from forge.wire.seats import Seat, session

from .conftest import InProcess
from .pty_run import FORGE, PtyRun
from .test_attach_cli import settings_and_code, shell_around

SEAT = Seat("acme", "proj", "lead")
DRAWN = b"\x1bc"
"""The view's screen starts with a reset: once it is drawn, attach is reading the keyboard."""


async def shell_ready(run: PtyRun) -> None:
    """The screen is drawn (attach reads the keyboard) and the shell's `#` prompt is on it, so
    typed keys reach a shell that reads them."""
    await run.expect(DRAWN)
    await run.expect(b"#", since=run.output.index(DRAWN))


def attach_argv(port: int) -> list[str]:
    return [*FORGE, "attach", str(SEAT), "--url", f"ws://127.0.0.1:{port}/socket"]


async def size_reaches(watcher: ForgeConnection, cols: int, rows: int) -> None:
    """Wait for the seat's terminal summary to report this size (the resize landed)."""
    while True:
        event = await watcher.next_event()
        if isinstance(event, Update) and event.variant == "terminal_changed":
            terminal = event.body["terminal"]
            if terminal and (terminal["cols"], terminal["rows"]) == (cols, rows):
                return


async def test_type_see_resize_pass_the_prefix_and_detach(
    with_terminals: Supervisor, free_port: int
) -> None:
    with PtyRun(shell_around(attach_argv(free_port)), cols=100, rows=30) as run:
        await shell_ready(run)
        async with connect(f"ws://127.0.0.1:{free_port}/socket") as watcher:
            await watcher.subscribe(session(SEAT))
            run.write(b"echo $((6*7))\r")
            await run.expect(b"42\r\n")
            run.write(b"stty size\r")
            await run.expect(b"30 100\r\n")
            run.process.setwinsize(40, 120)
            await size_reaches(watcher, 120, 40)
        run.write(b"stty size\r")
        await run.expect(b"40 120\r\n")
        run.write(b"stty quit undef; cat -v\r")
        run.write(b"\x1cx\r")
        await run.expect(b"^\\x\r\n")
        run.write(b"\x04\x1cd")
        assert await run.finish() == 0
    before, after, code, said = settings_and_code(run.output)
    assert code == 0
    assert said.endswith("forge attach: detached from acme/proj/lead")
    assert before == after


async def test_the_shell_exiting_ends_attach_with_its_status(
    with_terminals: Supervisor, free_port: int
) -> None:
    with PtyRun(attach_argv(free_port)) as run:
        await shell_ready(run)
        run.write(b"exit 7\r")
        assert await run.finish() == 0
    assert run.output.endswith(b"forge attach: the shell exited with status 7\r\n")


async def test_another_viewer_taking_control_is_told_and_a_close_ends_attach(
    with_terminals: Supervisor, free_port: int
) -> None:
    with PtyRun(attach_argv(free_port)) as run:
        await shell_ready(run)
        async with connect(f"ws://127.0.0.1:{free_port}/socket") as other:
            reply = await other.request(TerminalView(seat=SEAT))
            assert reply["ok"]
            await other.send(TerminalControl(seat=SEAT, id=reply["id"], take=True))
            while not isinstance(event := await other.next_event(), ControlFrame):
                pass
            await run.expect(b"took control; your keys are ignored - Ctrl-\\ c takes it back]")
            await other.send(TerminalClose(seat=SEAT, id=reply["id"]))
            assert await run.finish() == 0
    assert event.controller is not None
    assert run.output.endswith(b"forge attach: terminal 1 closed\r\n")


async def test_control_taken_by_another_viewer_is_taken_back_with_its_key(
    with_terminals: Supervisor, free_port: int
) -> None:
    """Issue 13 item 16: after another viewer takes control, `Ctrl-\\ c` takes it back (the
    other viewer hears it move), attach says so, and the keys typed next reach the shell."""
    with PtyRun(attach_argv(free_port)) as run:
        await shell_ready(run)
        async with connect(f"ws://127.0.0.1:{free_port}/socket") as other:
            reply = await other.request(TerminalView(seat=SEAT))
            await other.send(TerminalControl(seat=SEAT, id=reply["id"], take=True))
            await run.expect(b"c takes it back]")
            run.write(b"\x1cc")
            await run.expect(b"[forge attach: you have control again]")
            moved: list[int | None] = []
            while len(moved) < 2:
                if isinstance(event := await other.next_event(), ControlFrame):
                    moved.append(event.controller)
            run.write(b"echo $((6*7))\r")
            await run.expect(b"42\r\n")
            run.write(b"\x1cd")
            assert await run.finish() == 0
    assert moved[0] != moved[1]
    assert None not in moved


async def test_a_dropped_link_is_redialled_and_the_terminal_reattached(
    with_terminals: Supervisor, free_port: int
) -> None:
    with PtyRun(attach_argv(free_port)) as run:
        await shell_ready(run)
        run.write(b"x=$((6*7)); echo $x\r")
        await run.expect(b"42\r\n")
        (link,) = with_terminals.connections
        link.close("dropped by the test")
        await run.expect(b"reconnecting - Ctrl-\\ d detaches]\r\n")
        await run.expect(DRAWN, since=run.output.index(b"reconnecting"))
        run.write(b"echo again-$x\r")
        await run.expect(b"again-42\r\n")
        run.write(b"\x1cd")
        assert await run.finish() == 0
    assert run.output.endswith(b"forge attach: detached from acme/proj/lead\r\n")


async def test_a_crashed_terminal_host_ends_attach_with_the_reason(
    with_terminals: Supervisor, free_port: int
) -> None:
    with PtyRun(attach_argv(free_port)) as run:
        await shell_ready(run)
        (host,) = [w for w in with_terminals.workers() if w["name"] == "terminal-1"]
        os.kill(host["pid"], signal.SIGKILL)
        assert await run.finish() == 1
    assert b"host stopped (worker_crashed)" in run.output


async def test_after_a_supervisor_restart_attach_never_types_into_another_shell(
    in_process: InProcess, free_port: int
) -> None:
    first = await in_process.start()
    with PtyRun(attach_argv(free_port)) as run:
        await shell_ready(run)
        await in_process.stop(first)
        await run.expect(b"reconnecting - Ctrl-\\ d detaches]\r\n")
        await in_process.start()
        async with connect(f"ws://127.0.0.1:{free_port}/socket") as other:
            assert (await other.request(TerminalView(seat=SEAT)))["id"] == 1
            assert await run.finish() == 1
    assert run.output.endswith(
        b"forge attach: the terminal is gone: the supervisor restarted, so terminal 1 is gone\r\n"
    )


async def test_sigterm_ends_attach_with_the_tty_restored(
    with_terminals: Supervisor, free_port: int
) -> None:
    with PtyRun(shell_around(attach_argv(free_port))) as run:
        await shell_ready(run)
        attach = next(
            child
            for child in psutil.Process(run.process.pid).children(recursive=True)
            if "attach" in child.cmdline()
        )
        attach.terminate()
        assert await run.finish() == 0
    before, after, code, said = settings_and_code(run.output)
    assert code == 128 + signal.SIGTERM
    assert said.endswith("forge attach: terminated (SIGTERM)")
    assert before == after


async def test_attach_to_a_real_forge_supervise(supervise: Start, project_toml: str) -> None:
    supervised = await supervise(project_toml)
    with PtyRun(attach_argv(supervised.port)) as run:
        await shell_ready(run)
        run.write(b"echo $((6*7))\r")
        await run.expect(b"42\r\n")
        run.write(b"\x1cd")
        assert await run.finish() == 0
    assert run.output.endswith(b"forge attach: detached from acme/proj/lead\r\n")
