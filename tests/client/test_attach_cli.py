"""`forge attach` as a person runs it, in a real PTY: refusals, exit codes, the tty restored."""

from __future__ import annotations

import shlex

from forge.testing.supervised import Start

from .pty_run import FORGE, PtyRun
from .test_status_cli import forge


def shell_around(command: list[str]) -> list[str]:
    """`stty -g` before and after `command`, and its exit code, as lines the test can split."""
    line = shlex.join(command)
    return ["sh", "-c", f'stty -g; {line}; echo "rc=$?"; stty -g']


def settings_and_code(output: bytes) -> tuple[str, str, int, str]:
    lines = output.decode().replace("\r", "").strip().split("\n")
    code = next(int(line[3:]) for line in lines if line.startswith("rc="))
    said = "\n".join(line for line in lines[1:-1] if line and not line.startswith("rc="))
    return lines[0], lines[-1], code, said


async def test_a_bad_seat_is_refused_before_dialling() -> None:
    code, _, err = await forge("attach", "acme/proj", "--url", "ws://127.0.0.1:1/socket")
    assert code == 2
    assert err == "forge: a seat is ORG/PROJECT/LABEL, got 'acme/proj'\n"


async def test_attach_needs_a_terminal(free_port: int) -> None:
    url = f"ws://127.0.0.1:{free_port}/socket"
    code, _, err = await forge("attach", "acme/proj/lead", "--url", url)
    assert (code, err) == (2, "forge: forge attach needs a terminal on its standard input\n")


async def test_no_supervisor_exits_3_and_leaves_the_tty_alone(free_port: int) -> None:
    url = f"ws://127.0.0.1:{free_port}/socket"
    with PtyRun(shell_around([*FORGE, "attach", "acme/proj/lead", "--url", url])) as run:
        assert await run.finish() == 0
    before, after, code, said = settings_and_code(run.output)
    assert code == 3
    assert said == (
        f"forge: no forge supervisor at {url}: connection refused — start it with `forge supervise`"
    )
    assert before == after


async def test_a_refused_terminal_exits_1_with_the_servers_words_and_restores_the_tty(
    supervise: Start, project_toml: str
) -> None:
    supervised = await supervise(project_toml)
    with PtyRun(
        shell_around([*FORGE, "attach", "elsewhere/proj/lead", "--url", supervised.url])
    ) as run:
        assert await run.finish() == 0
    before, after, code, said = settings_and_code(run.output)
    assert code == 1
    assert said.startswith("forge attach: ")
    assert before == after


async def test_the_help_documents_the_detach_key_and_the_exit_codes() -> None:
    """Issue 13 item 16: the take-control key is documented beside the detach key."""
    code, out, _ = await forge("attach", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert (
        "Ctrl-\\ then d detaches; Ctrl-\\ then c takes control back when another viewer took "
        "it; Ctrl-\\ then anything else sends both keys"
    ) in flat
    assert "exit status: 0 detached, or the shell exited, or the terminal was closed;" in flat
    assert "3 no supervisor answered at the URL" in flat
