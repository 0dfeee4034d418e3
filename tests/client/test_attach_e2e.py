"""`forge attach` end to end: a real PTY on each side (ours and the terminal host's), a real
socket and supervisor in between. What is asserted is what the person sees on their terminal."""

from __future__ import annotations

from forge.client.connection import connect
from forge.client.frames import TerminalControl as ControlFrame
from forge.supervisor.core import Supervisor
from forge.wire.client import TerminalClose, TerminalControl, TerminalView
from forge.wire.seats import Seat

from .pty_run import FORGE, PtyRun
from .test_attach_cli import settings_and_code, shell_around

SEAT = Seat("acme", "proj", "lead")
PROMPT = b"# "
"""/bin/sh's prompt for root (the test machine runs as root)."""


def attach_argv(port: int) -> list[str]:
    return [*FORGE, "attach", str(SEAT), "--url", f"ws://127.0.0.1:{port}/socket"]


async def test_type_see_resize_pass_the_prefix_and_detach(
    with_terminals: Supervisor, free_port: int
) -> None:
    run = PtyRun(shell_around(attach_argv(free_port)), cols=100, rows=30)
    try:
        await run.expect(PROMPT)
        run.write(b"echo hi\r")
        await run.expect(b"\r\nhi\r\n")
        run.write(b"stty size\r")
        await run.expect(b"\r\n30 100\r\n")
        run.process.setwinsize(40, 120)
        run.write(b"stty size\r")
        await run.expect(b"\r\n40 120\r\n")
        run.write(b"stty quit undef; cat -v\r")
        run.write(b"\x1cx\r")
        await run.expect(b"^\\x\r\n")
        run.write(b"\x04")
        await run.expect(b"\r\n" + PROMPT)
        run.write(b"\x1cd")
        assert await run.finish() == 0
    finally:
        run.close()
    before, after, code, said = settings_and_code(run.output)
    assert code == 0
    assert said.endswith("forge attach: detached from acme/proj/lead")
    assert before == after


async def test_the_shell_exiting_ends_attach_with_its_status(
    with_terminals: Supervisor, free_port: int
) -> None:
    run = PtyRun(attach_argv(free_port))
    try:
        await run.expect(PROMPT)
        run.write(b"exit 7\r")
        assert await run.finish() == 0
    finally:
        run.close()
    assert run.output.endswith(b"forge attach: the shell exited with status 7\r\n")


async def test_another_viewer_taking_control_is_told_and_a_close_ends_attach(
    with_terminals: Supervisor, free_port: int
) -> None:
    run = PtyRun(attach_argv(free_port))
    try:
        await run.expect(PROMPT)
        async with connect(f"ws://127.0.0.1:{free_port}/socket") as other:
            reply = await other.request(TerminalView(seat=SEAT))
            assert reply["ok"]
            await other.send(TerminalControl(seat=SEAT, id=reply["id"], take=True))
            while not isinstance(event := await other.next_event(), ControlFrame):
                pass
            await run.expect(b"took control; your keys are ignored]")
            await other.send(TerminalClose(seat=SEAT, id=reply["id"]))
            assert await run.finish() == 0
    finally:
        run.close()
    assert event.controller is not None
    assert run.output.endswith(b"forge attach: terminal 1 closed\r\n")
