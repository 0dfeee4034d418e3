"""The agent worker's pure parts: the turn queue, the CLI's messages as events, the refusals of
a seat that lacks a piece, and the protocol's decoding of a bad request."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest
from claude_agent_sdk import AssistantMessage, StreamEvent, SystemMessage, TextBlock

from forge.ipc.errors import RequestFailed, WorkerConfigError
from forge.ipc.protocol import decode_request
from forge.workers.agent.events import events_of
from forge.workers.agent.locate import find_cli, seat_folder
from forge.workers.agent.protocol import (
    Answer,
    Choose,
    Delta,
    Deny,
    Problem,
    Prompt,
    SeatConfig,
    SessionStarted,
)
from forge.workers.agent.turns import QueuedPrompt, TurnQueue


def test_prompts_run_one_at_a_time_in_the_order_sent() -> None:
    queue = TurnQueue()
    first, ahead = queue.submit("one")
    assert (first, ahead) == (QueuedPrompt(1, "one"), 0)
    assert queue.submit("two") == (QueuedPrompt(2, "two"), 1)
    assert queue.submit("three") == (QueuedPrompt(3, "three"), 2)
    assert queue.finish() == (QueuedPrompt(1, "one"), QueuedPrompt(2, "two"))
    assert queue.finish() == (QueuedPrompt(2, "two"), QueuedPrompt(3, "three"))
    assert queue.finish() == (QueuedPrompt(3, "three"), None)
    assert queue.finish() == (None, None)
    assert queue.submit("four") == (QueuedPrompt(4, "four"), 0)


def test_clearing_drops_the_running_prompt_and_the_waiting_ones() -> None:
    queue = TurnQueue()
    for text in ("one", "two"):
        queue.submit(text)
    assert [prompt.text for prompt in queue.clear()] == ["one", "two"]
    assert queue.running is None
    assert queue.submit("three")[1] == 0


def test_text_and_thinking_deltas_become_delta_events_and_others_nothing() -> None:
    def streamed(delta: dict[str, str]) -> StreamEvent:
        event = {"type": "content_block_delta", "index": 1, "delta": delta}
        return StreamEvent(uuid="u", session_id="s", event=event)

    assert events_of(streamed({"type": "text_delta", "text": "Hi"})) == [
        Delta(kind="text", index=1, text="Hi")
    ]
    assert events_of(streamed({"type": "thinking_delta", "thinking": "Hm"})) == [
        Delta(kind="thinking", index=1, text="Hm")
    ]
    assert events_of(streamed({"type": "input_json_delta", "partial_json": "{"})) == []
    assert events_of(StreamEvent(uuid="u", session_id="s", event={"type": "ping"})) == []


def test_an_assistant_error_is_a_sentence_not_a_message() -> None:
    said = AssistantMessage(
        content=[TextBlock("Not logged in · Please run /login")],
        model="<synthetic>",
        error="authentication_failed",
    )
    [problem] = events_of(said)
    assert isinstance(problem, Problem)
    assert problem.code == "credentials_refused"
    assert "Not logged in" in problem.message
    assert "forge stores neither" in problem.message


def test_a_retried_401_is_a_refused_credential_and_other_retries_are_quiet() -> None:
    def retry(status: int, error: str) -> SystemMessage:
        return SystemMessage(
            subtype="api_retry", data={"error_status": status, "error": error, "attempt": 1}
        )

    [problem] = events_of(retry(401, "authentication_failed"))
    assert isinstance(problem, Problem)
    assert (problem.code, "HTTP 401" in problem.message) == ("credentials_refused", True)
    assert events_of(retry(529, "overloaded")) == []


def test_the_init_message_names_the_session() -> None:
    init = SystemMessage(
        subtype="init",
        data={
            "session_id": "abc",
            "model": "m",
            "permissionMode": "default",
            "cwd": "/w",
            "tools": ["Bash"],
            "slash_commands": ["compact"],
        },
    )
    assert events_of(init) == [
        SessionStarted(
            session_id="abc",
            model="m",
            permission_mode="default",
            cwd="/w",
            tools=["Bash"],
            slash_commands=["compact"],
        )
    ]


def test_a_cli_path_must_be_an_executable_file(tmp_path: Path) -> None:
    script = tmp_path / "claude"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(WorkerConfigError, match="not an executable file"):
        find_cli(str(script), tmp_path)
    os.chmod(script, 0o755)
    assert find_cli(str(script), tmp_path) == script
    with pytest.raises(WorkerConfigError, match="not an executable file"):
        find_cli(str(tmp_path), tmp_path)


def test_without_a_bundled_cli_or_one_on_path_the_refusal_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(WorkerConfigError) as refused:
        find_cli(None, tmp_path)
    assert "[agent] cli_path" in str(refused.value)
    assert "pip install" in str(refused.value)


def test_the_seat_folder_must_exist(tmp_path: Path) -> None:
    assert seat_folder(str(tmp_path)) == tmp_path
    with pytest.raises(WorkerConfigError, match="not a folder"):
        seat_folder(str(tmp_path / "gone"))


def test_bad_requests_are_refused_naming_the_field() -> None:
    with pytest.raises(RequestFailed, match="text"):
        decode_request(Prompt, {"text": ""})
    with pytest.raises(RequestFailed, match="reason"):
        decode_request(Answer, {"ask_id": "a", "decision": {"type": "deny", "reason": ""}})
    with pytest.raises(RequestFailed, match="decision"):
        decode_request(Answer, {"ask_id": "a", "decision": {"type": "always_and_forever"}})
    answer = decode_request(
        Answer, {"ask_id": "a", "decision": {"type": "choose", "answers": {"Q?": ["A"]}}}
    )
    assert answer.decision == Choose(answers={"Q?": ["A"]})
    assert decode_request(Answer, Answer(ask_id="a", decision=Deny("no")).args()).decision == Deny(
        "no"
    )
    with pytest.raises(msgspec.ValidationError, match="permission_mode"):
        msgspec.convert({"cwd": "/w", "permission_mode": "yolo"}, SeatConfig)
