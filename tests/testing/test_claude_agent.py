"""The real Claude Code CLI (bundled in claude-agent-sdk's wheel), driven through the SDK, against
forge's scripted model server: the only fake is the network. Each test starts the CLI once or
twice (a large Node program: seconds on a loaded machine), so timeouts are generous and nothing
asserts on the wall clock."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from forge.testing.model_conversation import messages as conversation
from forge.testing.model_conversation import tool_results, user_text
from forge.testing.model_script import Script, parse_script
from forge.testing.model_server import QUIET_CLI_ENV, REDACTED, ModelServer

sdk = pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    StreamEvent,
    ToolPermissionContext,
)

pytestmark = pytest.mark.timeout(300)

API_KEY = "test-key-not-a-secret"
Permission = PermissionResultAllow | PermissionResultDeny
Decide = Callable[[str, dict[str, Any], ToolPermissionContext], Awaitable[Permission]]


@pytest.fixture(autouse=True)
def _no_outer_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK passes the test's environment to the CLI: none of an outer session's model,
    proxy or Claude settings may steer it."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "CLAUDE", "OTEL_")) or name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)


class Seat:
    """A temporary home, config dir and work dir for one CLI, and the options that reach it."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.config = root / "claude-config"
        self.work = root / "work"
        for path in (self.home, self.config, self.work):
            path.mkdir()
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def options(
        self, server: ModelServer, *, decide: Decide | None = None, **more: Any
    ) -> ClaudeAgentOptions:
        async def can_use_tool(
            name: str, tool_input: dict[str, Any], context: ToolPermissionContext
        ) -> Permission:
            self.asked.append((name, tool_input))
            return await decide(name, tool_input, context) if decide else PermissionResultAllow()

        env = {
            "HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.config),
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": API_KEY,
            **QUIET_CLI_ENV,
        }
        return ClaudeAgentOptions(cwd=str(self.work), env=env, can_use_tool=can_use_tool, **more)


@pytest.fixture
def seat(tmp_path: Path) -> Seat:
    return Seat(tmp_path)


async def converse(options: ClaudeAgentOptions, prompt: str) -> list[Any]:
    """Every message of one exchange, through the result."""
    async with ClaudeSDKClient(options) as client:
        await client.query(prompt)
        return [message async for message in client.receive_response()]


def result_of(messages: list[Any]) -> ResultMessage:
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert len(results) == 1, messages
    return results[0]


def script(*turns: dict[str, Any]) -> Script:
    return parse_script({"turns": list(turns)})


def text_deltas(messages: list[Any]) -> list[str]:
    """The text deltas the CLI passed on as partial messages, in order."""
    return [
        m.event["delta"]["text"]
        for m in messages
        if isinstance(m, StreamEvent)
        and m.event.get("type") == "content_block_delta"
        and m.event["delta"].get("type") == "text_delta"
    ]


async def test_streamed_text_arrives_as_partial_and_whole_messages_with_the_scripted_usage(
    seat: Seat,
) -> None:
    text = "Hello from the scripted model, in several deltas."
    usage = {"input_tokens": 1234, "output_tokens": 56, "cache_read_input_tokens": 7}
    async with ModelServer(script({"say": text, "usage": usage})) as server:
        messages = await converse(seat.options(server, include_partial_messages=True), "Say hello.")
    deltas = text_deltas(messages)
    assert len(deltas) > 1
    assert "".join(deltas) == text
    whole = [b.text for m in messages if isinstance(m, AssistantMessage) for b in m.content]
    assert whole == [text]
    result = result_of(messages)
    assert result.subtype == "success"
    assert result.result == text
    assert result.usage is not None
    assert result.usage["input_tokens"] == 1234
    assert result.usage["output_tokens"] == 56
    assert result.usage["cache_read_input_tokens"] == 7
    assert result.total_cost_usd is not None
    assert result.total_cost_usd > 0
    [request] = server.message_requests()
    assert "Say hello." in user_text(request.body)
    assert request.headers["x-api-key"] == REDACTED
    assert API_KEY not in repr(server.requests)
    transcripts = list((seat.config / "projects").glob(f"*/{result.session_id}.jsonl"))
    assert len(transcripts) == 1, "the CLI keeps its transcript under CLAUDE_CONFIG_DIR/projects"
    assert text in transcripts[0].read_text()
    assert API_KEY not in transcripts[0].read_text()


async def test_an_allowed_bash_call_runs_and_its_result_reaches_the_model(seat: Seat) -> None:
    played = script({"bash": "echo hi > f.txt"}, {"when": {"tool_result": "Bash"}, "say": "Done."})
    async with ModelServer(played) as server:
        messages = await converse(seat.options(server), "Make f.txt.")
    assert result_of(messages).result == "Done."
    assert seat.asked == [("Bash", {"command": "echo hi > f.txt"})]
    assert (seat.work / "f.txt").read_text() == "hi\n"
    [result] = tool_results(server.message_requests()[1].body)
    assert result.tool_use_id == "toolu_forge_0_0"
    assert result.tool_name == "Bash"
    assert not result.is_error


async def test_a_read_then_an_edit_change_the_file(seat: Seat) -> None:
    target = seat.work / "notes.txt"
    target.write_text("colour: red\n")
    edit = {"file_path": str(target), "old_string": "red", "new_string": "blue"}
    played = script(
        {"tool": {"name": "Read", "input": {"file_path": str(target)}}},
        {"when": {"tool_result": "Read"}, "edit": edit},
        {"when": {"tool_result": "Edit"}, "say": "Edited."},
    )
    async with ModelServer(played) as server:
        messages = await converse(seat.options(server), "Make it blue.")
    assert result_of(messages).result == "Edited."
    assert target.read_text() == "colour: blue\n"
    [read] = tool_results(server.message_requests()[1].body)
    assert "colour: red" in read.text
    [edited] = tool_results(server.message_requests()[2].body)
    assert not edited.is_error
    assert [name for name, _ in seat.asked] == ["Edit"], "reading in the work dir needs no ask"


async def test_a_denied_call_reaches_the_model_as_an_error_with_the_reason(seat: Seat) -> None:
    async def deny(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> Permission:
        return PermissionResultDeny(message="no files today")

    played = script(
        {"bash": "echo hi > f.txt"},
        {"when": {"tool_result": "Bash", "tool_error": True}, "say": "Understood."},
    )
    async with ModelServer(played) as server:
        messages = await converse(seat.options(server, decide=deny), "Make f.txt.")
    assert result_of(messages).result == "Understood."
    assert not (seat.work / "f.txt").exists()
    [result] = tool_results(server.message_requests()[1].body)
    assert result.is_error
    assert "no files today" in result.text


async def test_ask_user_question_is_answered_through_the_permission_callback(seat: Seat) -> None:
    async def answer(
        name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> Permission:
        assert name == "AskUserQuestion"
        [question] = tool_input["questions"]
        return PermissionResultAllow(
            updated_input={**tool_input, "answers": {question["question"]: "Blue"}}
        )

    question = {"question": "Which colour?", "header": "Colour", "options": ["Red", "Blue"]}
    played = script(
        {"ask": question}, {"when": {"tool_result": "AskUserQuestion"}, "say": "Blue it is."}
    )
    async with ModelServer(played) as server:
        messages = await converse(seat.options(server, decide=answer), "Pick a colour.")
    assert result_of(messages).result == "Blue it is."
    [(name, asked)] = seat.asked
    assert name == "AskUserQuestion"
    assert asked["questions"][0]["options"][1] == {"label": "Blue", "description": "Blue"}
    [result] = tool_results(server.message_requests()[1].body)
    assert not result.is_error
    assert "Which colour?" in result.text
    assert "Blue" in result.text


async def test_interrupt_mid_stream_ends_the_turn_and_the_next_request_shows_the_cut(
    seat: Seat,
) -> None:
    played = script(
        {"say": "A long answer that will not finish.", "stall": {"after": 2}},
        {"when": {"user_text": "Go on."}, "say": "Going on."},
    )
    partial = "A long answer that will not fini"  # two deltas of 16 characters
    messages: list[Any] = []
    streamed = asyncio.Event()

    async def read(client: ClaudeSDKClient) -> None:
        async for message in client.receive_response():
            messages.append(message)
            if "".join(text_deltas(messages)) == partial:
                streamed.set()

    async with ModelServer(played) as server:
        client = ClaudeSDKClient(seat.options(server, include_partial_messages=True))
        async with client:
            await client.query("Talk for a while.")
            reading = asyncio.create_task(read(client))
            held = await server.wait_stalled()
            # The server wrote both deltas before it held the stream, but the CLI may not have
            # read them yet: the cut is what the CLI had passed on when the interrupt came.
            waiting = asyncio.create_task(streamed.wait())
            await asyncio.wait({waiting, reading}, return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            assert streamed.is_set(), messages
            await client.interrupt()
            await reading
            await server.wait_for(lambda: held.outcome != "stalled")
            await client.query("Go on.")
            after = [message async for message in client.receive_response()]
    assert held.outcome == "left"
    assert result_of(messages).subtype == "error_during_execution"
    assert [b.text for m in messages if isinstance(m, AssistantMessage) for b in m.content] == [
        partial
    ]
    assert result_of(after).result == "Going on."
    resumed = server.message_requests()[1].body
    said = [m for m in conversation(resumed) if m.get("role") == "assistant"]
    # The CLI puts messages of other roles (`system`) among them: the cut is its last answer.
    assert said, resumed["messages"]
    assert {"type": "text", "text": partial} in said[-1]["content"], resumed["messages"]
    assert "[Request interrupted by user]" in user_text(resumed)


async def test_an_overloaded_answer_is_retried(seat: Seat) -> None:
    played = script({"fail": "overloaded"}, {"say": "Second time lucky."})
    async with ModelServer(played) as server:
        messages = await converse(seat.options(server), "Hello?")
    assert result_of(messages).result == "Second time lucky."
    first, second = server.message_requests()
    assert (first.status, first.outcome, second.outcome) == (529, "failed", "answered")
    assert second.body["messages"] == first.body["messages"]


async def test_a_lasting_overload_surfaces_as_an_error_result_after_the_retries(seat: Seat) -> None:
    async with ModelServer(script(*[{"fail": "overloaded"}] * 3)) as server:
        options = seat.options(server)
        options.env["CLAUDE_CODE_MAX_RETRIES"] = "1"
        messages = await converse(options, "Hello?")
    result = result_of(messages)
    assert result.is_error
    [said] = [m for m in messages if isinstance(m, AssistantMessage)]
    assert said.error == "server_error"
    assert "529" in said.content[0].text
    assert [r.outcome for r in server.message_requests()] == ["failed", "failed"]


async def test_resume_by_session_id_sends_the_earlier_turns(seat: Seat) -> None:
    played = script(
        {"say": "The first answer."},
        {"when": {"user_text": "And now?"}, "say": "The second answer."},
    )
    async with ModelServer(played) as server:
        first = result_of(await converse(seat.options(server), "First question."))
        second = result_of(
            await converse(seat.options(server, resume=first.session_id), "And now?")
        )
    assert second.result == "The second answer."
    resumed = server.message_requests()[1].body
    said = [str(message["content"]) for message in resumed["messages"]]
    assert any("First question." in text for text in said)
    assert any("The first answer." in text for text in said)


# The CLI under bubblewrap in a network namespace of its own (only loopback, nothing behind it):
# it reaches the server through a Unix socket (ANTHROPIC_UNIX_SOCKET), and strace records every
# connect(2) it makes.
NETNS_CLI = """#!/bin/sh
exec bwrap --dev-bind / / --unshare-net -- strace -f -qq -e trace=connect -o "{log}" "{cli}" "$@"
"""


def bundled_cli() -> Path:
    return Path(sdk.__file__).parent / "_bundled" / "claude"


def inet_connects(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if "AF_INET" in line]


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
@pytest.mark.parametrize("quiet", [True, False], ids=["quiet-env", "default-env"])
async def test_in_a_network_namespace_the_quiet_cli_reaches_nothing_but_its_model(
    seat: Seat, tmp_path: Path, quiet: bool
) -> None:
    if shutil.which("bwrap") is None:
        pytest.fail("bubblewrap is a test dependency (apt-get install bubblewrap)")
    log = tmp_path / "connects.log"
    wrapper = tmp_path / "claude-netns"
    wrapper.write_text(NETNS_CLI.format(log=log, cli=bundled_cli()))
    wrapper.chmod(0o755)
    socket_path = tmp_path / "model.sock"
    # Without the quiet env the CLI also asks its model for a title, at once.
    title = {"when": {"system_text": "naming a coding session"}, "say": "A title"}
    played = script(title, {"say": "Offline and fine."})
    async with ModelServer(played, unix_path=socket_path) as server:
        options = seat.options(server, cli_path=str(wrapper))
        options.env["ANTHROPIC_UNIX_SOCKET"] = str(socket_path)
        if not quiet:
            for name in QUIET_CLI_ENV:
                del options.env[name]
        messages = await converse(options, "Are you there?")
    assert result_of(messages).result == "Offline and fine."
    assert f'sun_path="{socket_path}"' in log.read_text()
    if quiet:
        assert inet_connects(log) == []
    else:
        assert inet_connects(log), "without the quiet env the CLI reaches out (feature flags, DNS)"
