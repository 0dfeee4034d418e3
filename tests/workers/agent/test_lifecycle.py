"""An agent worker's life: refused without its pieces, a refused credential as a sentence, killed
mid-turn and resumed by session id, and stopped with nothing of the CLI left behind."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from forge.ipc.errors import RequestFailed
from forge.ipc.manager import WorkerRow, WorkerState
from forge.procs import descendants, is_live
from forge.testing.model_server import ModelServer
from forge.workers.agent.protocol import (
    INSTALL_COMMAND,
    AllowOnce,
    Answer,
    PermissionAsk,
    Problem,
    Prompt,
    PromptLifecycle,
    Result,
    SessionStarted,
    Start,
    Stop,
)
from tests.workers.agent.conftest import MakeSeat, ended, script

pytestmark = pytest.mark.timeout(300)


def restarted_once(row: WorkerRow) -> bool:
    return row.restarts == 1 and row.state is WorkerState.READY


async def test_a_cli_path_that_is_no_program_fails_the_seat_naming_it(
    make_seat: MakeSeat, tmp_path: Path
) -> None:
    async with ModelServer(script({"say": "unused"})) as server:
        seat = make_seat(server)
        handle = seat.launch(cli_path=str(tmp_path / "no-claude-here"))
        row = await handle.wait_for(lambda row: row.state is WorkerState.FAILED, within=60)
    assert row.restarts == 0
    assert row.last_reason is not None
    assert "[agent] cli_path" in row.last_reason
    assert "no-claude-here" in row.last_reason


async def test_without_the_sdk_the_seat_fails_naming_the_install_command(
    make_seat: MakeSeat, tmp_path: Path
) -> None:
    shadow = tmp_path / "shadow" / "claude_agent_sdk"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named claude_agent_sdk')\n")
    async with ModelServer(script({"say": "unused"})) as server:
        seat = make_seat(server)
        env = {**seat.env(), "PYTHONPATH": str(shadow.parent)}
        handle = seat.launch(env=env)
        row = await handle.wait_for(lambda row: row.state is WorkerState.FAILED, within=60)
    assert row.last_reason is not None
    assert INSTALL_COMMAND in row.last_reason


async def test_a_refused_key_is_a_sentence_and_ends_the_turn(make_seat: MakeSeat) -> None:
    """The CLI retries a 401 ten times with a growing backoff (minutes): the seat must not wait
    through that, so the first refusal ends the turn."""
    refused = {"fail": {"status": 401, "message": "invalid x-api-key"}}
    async with ModelServer(script(*[refused] * 12)) as server:
        seat = make_seat(server)
        await seat.start()
        accepted = await seat.call(Prompt(text="Hello?"))
        end = await seat.next(PromptLifecycle, ended(accepted.prompt_id))
        await seat.stop()
    assert end.outcome == "failed"
    problem = seat.of(Problem)[0]
    assert problem.code == "credentials_refused"
    assert "401" in problem.message
    assert "ANTHROPIC_API_KEY" in problem.message
    assert len(server.message_requests()) <= 2, "the CLI's retries were cut short"


async def test_no_credential_at_all_is_a_sentence(make_seat: MakeSeat) -> None:
    async with ModelServer(script({"say": "unused"})) as server:
        seat = make_seat(server)
        await seat.start(env=seat.env(api_key=None))
        accepted = await seat.call(Prompt(text="Hello?"))
        end = await seat.next(PromptLifecycle, ended(accepted.prompt_id))
        await seat.stop()
    assert end.outcome == "failed"
    [problem] = seat.of(Problem)
    assert problem.code == "credentials_refused"
    assert "/login" in problem.message
    assert server.message_requests() == []


async def test_a_worker_killed_mid_turn_is_restarted_and_resumes_its_session(
    make_seat: MakeSeat,
) -> None:
    played = script(
        {"say": "The first answer."},
        {
            "when": {"user_text": "Second question."},
            "say": "Cut off by a kill.",
            "stall": {"after": 1},
        },
        {"when": {"user_text": "Third question."}, "say": "Resumed."},
    )
    async with ModelServer(played) as server:
        seat = make_seat(server)
        handle = await seat.start()
        first = await seat.call(Prompt(text="First question."))
        await seat.next(PromptLifecycle, ended(first.prompt_id))
        session_id = seat.of(SessionStarted)[0].session_id
        await seat.call(Prompt(text="Second question."))
        held = await server.wait_stalled()
        os.kill(handle.pid or 0, signal.SIGKILL)
        row = await handle.wait_for(restarted_once)
        await server.wait_for(lambda: held.outcome == "left")
        since = len(seat.events)
        await seat.call(Start(session_id=session_id))
        third = await seat.call(Prompt(text="Third question."))
        await seat.next(PromptLifecycle, ended(third.prompt_id), since=since)
        await seat.stop()
    assert row.last_exit == "SIGKILL"
    assert seat.of(Result, since)[-1].text == "Resumed."
    resumed = server.message_requests()[-1].body
    said = [str(message["content"]) for message in resumed["messages"]]
    assert any("First question." in text for text in said)
    assert any("The first answer." in text for text in said)


@contextlib.asynccontextmanager
async def fifo_line(path: Path) -> AsyncIterator[asyncio.Future[str]]:
    """A FIFO at `path` and a future of the first line a writer writes to it."""
    os.mkfifo(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    loop = asyncio.get_running_loop()
    line: asyncio.Future[str] = loop.create_future()
    got = bytearray()

    def readable() -> None:
        got.extend(os.read(fd, 64))
        if b"\n" in got and not line.done():
            line.set_result(got.split(b"\n")[0].decode())

    loop.add_reader(fd, readable)
    try:
        yield line
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def test_stop_ends_the_cli_and_the_tools_it_runs(make_seat: MakeSeat, tmp_path: Path) -> None:
    fifo = tmp_path / "escaped"
    # A tool process in the CLI's reach, and one that left for a session of its own (setsid, as a
    # daemon would) and says its pid once it has.
    command = f"setsid sh -c 'echo $$ > {fifo}; exec sleep 301' & sleep 300"
    played = script({"bash": command}, {"say": "unreached"})
    async with ModelServer(played) as server, fifo_line(fifo) as escaped_line:
        seat = make_seat(server)
        handle = await seat.start()
        await seat.call(Prompt(text="Wait a while."))
        ask = await seat.next(PermissionAsk)
        await seat.call(Answer(ask_id=ask.ask_id, decision=AllowOnce()))
        escaped = int(await escaped_line)
        assert handle.pid is not None
        tree = descendants(handle.pid)
        assert escaped in tree
        assert os.getsid(escaped) != os.getsid(handle.pid)
        stopped = await seat.call(Stop())
        left = [pid for pid in tree if is_live(pid)]
        assert handle.row.state is WorkerState.READY, "the worker outlives its session"
    assert left == []
    assert set(stopped.killed) <= set(tree)
    [end] = [e for e in seat.of(PromptLifecycle) if e.phase == "ended"]
    assert end.outcome == "dropped"


async def test_an_ask_pending_when_the_worker_dies_never_runs_and_the_resumed_session_goes_on(
    make_seat: MakeSeat,
) -> None:
    played = script(
        {"bash": "echo hi > f.txt"},
        {"when": {"user_text": "Go on."}, "say": "Going on."},
    )
    async with ModelServer(played) as server:
        seat = make_seat(server)
        handle = await seat.start()
        await seat.call(Prompt(text="Make f.txt."))
        ask = await seat.next(PermissionAsk)
        session_id = seat.of(SessionStarted)[0].session_id
        assert handle.pid is not None
        os.kill(handle.pid, signal.SIGKILL)
        await handle.wait_for(restarted_once)
        since = len(seat.events)
        await seat.call(Start(session_id=session_id))
        with pytest.raises(RequestFailed) as gone:
            await seat.call(Answer(ask_id=ask.ask_id, decision=AllowOnce()))
        resumed = await seat.call(Prompt(text="Go on."))
        await seat.next(PromptLifecycle, ended(resumed.prompt_id), since=since)
        await seat.stop()
    assert gone.value.code == "unknown_ask"
    assert not (seat.work / "f.txt").exists()
    assert seat.of(Result, since)[-1].text == "Going on."
    last = server.message_requests()[-1].body
    said = [str(message["content"]) for message in last["messages"]]
    assert any("Make f.txt." in text for text in said), "the resumed conversation keeps the prompt"


async def test_a_cli_that_dies_is_a_sentence_and_its_worker_is_restarted(
    make_seat: MakeSeat,
) -> None:
    async with ModelServer(script({"say": "Slowly.", "stall": {"after": 1}})) as server:
        seat = make_seat(server)
        handle = await seat.start()
        await seat.call(Prompt(text="Hello?"))
        await server.wait_stalled()
        assert handle.pid is not None
        [cli] = [pid for pid in descendants(handle.pid) if "claude" in " ".join(_cmdline(pid))]
        os.kill(cli, signal.SIGKILL)
        problem = await seat.next(Problem)
        row = await handle.wait_for(restarted_once)
    assert problem.code == "cli_exited"
    assert "Claude Code CLI" in problem.message
    assert row.last_exit == 0


def _cmdline(pid: int) -> list[str]:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    return []


async def test_a_session_the_cli_never_recorded_goes_on_as_a_fresh_one_and_says_so(
    make_seat: MakeSeat,
) -> None:
    """A worker killed before the CLI wrote its session's first turn leaves an id the CLI cannot
    resume: the seat starts a new session (not a failed seat) and says why."""
    never = "0b0e9a52-5a43-4c55-9d6b-2f4a9e1c7d10"
    async with ModelServer(script({"say": "Fresh."})) as server:
        seat = make_seat(server)
        seat.launch()
        started = await seat.call(Start(session_id=never))
        problem = await seat.next(Problem)
        turn = await seat.call(Prompt(text="Hello."))
        await seat.next(PromptLifecycle, ended(turn.prompt_id))
        await seat.stop()
    assert started.resumed is None
    assert problem.code == "session_not_recorded"
    assert never in problem.message
    assert seat.of(Result)[-1].text == "Fresh."
