"""`forge agent spawn|prompt|asks|answer` as a person runs them, against a real `forge
supervise`, the real CLI and the scripted model: the prompt's answer streams to stdout, its ask
is listed and answered from another terminal, and the prompt exits when the turn ends; Ctrl-C
(SIGINT) interrupts the turn on the seat, as every other connection sees it."""

from __future__ import annotations

import asyncio
import signal
import sys

import pytest

from tests.supervisor.agent.conftest import (
    WITHIN,
    AgentSupervisor,
    body,
    ended,
    hold_session,
    reader,
)

pytestmark = pytest.mark.timeout(600)


async def forge(*args: str) -> tuple[int, str, str]:
    """Run `forge ARGS...`; its exit code, stdout and stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "forge.cli", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_a_prompt_streams_its_answer_and_its_ask_is_answered_from_another_terminal(
    agent_supervisor: AgentSupervisor,
) -> None:
    _, supervised, project = await agent_supervisor(
        {"bash": "echo hi > f.txt && echo made it"},
        {"when": {"tool_result": "Bash"}, "say": "Done, f.txt is made."},
    )
    url = ("--url", supervised.url)
    code, out, err = await forge("agent", "spawn", "acme/web/main", *url)
    assert (code, err) == (0, ""), err
    assert out == f"spawned an agent on acme/web/main in {project}\n"
    prompting = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "forge.cli", "agent", "prompt", "acme/web/main", "Make f.txt.", *url,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert prompting.stderr is not None
    async with asyncio.timeout(WITHIN):
        said = (await prompting.stderr.readline()).decode()
    assert said.startswith("asks: toolu_"), said
    code, listed, _ = await forge("agent", "asks", *url)
    assert code == 0
    [line] = listed.splitlines()
    ask_id = line.split()[0]
    assert line == f"{ask_id}  acme/web/main  Bash: echo hi > f.txt && echo made it"
    assert said.split()[1] == ask_id
    code, answered, err = await forge("agent", "answer", ask_id, "allow", *url)
    assert (code, answered) == (0, f"{ask_id}: answered\n"), err
    async with asyncio.timeout(WITHIN):
        out_bytes, _ = await prompting.communicate()
    assert prompting.returncode == 0
    assert out_bytes.decode() == "\n[Bash] echo hi > f.txt && echo made it\nDone, f.txt is made.\n"
    assert (project / "f.txt").read_text() == "hi\n"
    code, _, err = await forge("agent", "answer", ask_id, "allow", *url)
    assert code == 1
    assert f"no ask {ask_id} waits on any agent seat" in err


async def test_ctrl_c_interrupts_the_turn_on_the_seat_and_exits_130(
    agent_supervisor: AgentSupervisor,
) -> None:
    server, supervised, _ = await agent_supervisor(
        {"say": "A long answer that the person cuts short.", "stall": {"after": 2}},
        {"when": {"user_text": "Now briefly."}, "say": "Briefly."},
    )
    url = ("--url", supervised.url)
    code, _, err = await forge("agent", "spawn", "acme/web/main", *url)
    assert code == 0, err
    watcher = await reader(supervised)
    await hold_session(watcher)
    prompting = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "forge.cli", "agent", "prompt", "acme/web/main", "Talk.", *url,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert prompting.stdout is not None
    await server.wait_stalled()
    shown = b"A long answer that the person cu"
    streamed = b""
    async with asyncio.timeout(WITHIN):
        while len(streamed) < len(shown):
            streamed += await prompting.stdout.read(64)
    assert streamed == shown, "the two deltas before the stall, as they streamed"
    prompting.send_signal(signal.SIGINT)
    cut = body(await watcher.first(ended))
    assert cut["outcome"] == "interrupted"
    async with asyncio.timeout(WITHIN):
        rest, err_bytes = await prompting.communicate()
    assert prompting.returncode == 130
    assert rest == b"\n"
    said = err_bytes.decode()
    assert said == "forge agent prompt: interrupted: the turn on acme/web/main was cancelled\n"
    since = len(watcher.frames)
    code, out, err = await forge("agent", "prompt", "acme/web/main", "Now briefly.", *url)
    assert (code, out, err) == (0, "Briefly.\n", "")
    assert body(await watcher.first(ended, since))["outcome"] == "completed"
