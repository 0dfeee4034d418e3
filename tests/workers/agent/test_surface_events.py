"""The CLI's messages for the agent surface as worker events: subagents in the init, a tool
result's background record (or a string record), and a task's start and end (reported twice)."""

from __future__ import annotations

import pytest

pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import (
    SystemMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
    ToolResultBlock,
    UserMessage,
)

from forge.workers.agent.events import events_of
from forge.workers.agent.protocol import (
    SessionStarted,
    TaskEnded,
    TaskStarted,
    ToolResult,
)

OUTPUT = "/tmp/claude-0/-w/s1/tasks/bg1.output"


def test_the_init_names_the_subagent_types() -> None:
    init = SystemMessage(
        subtype="init",
        data={"session_id": "s1", "slash_commands": ["compact"], "agents": ["Explore", "Plan"]},
    )
    [started] = events_of(init)
    assert isinstance(started, SessionStarted)
    assert started.agents == ["Explore", "Plan"]


def result(record: object) -> UserMessage:
    block = ToolResultBlock(tool_use_id="toolu_1", content="running", is_error=False)
    return UserMessage(content=[block], tool_use_result=record)  # type: ignore[arg-type]


def test_a_background_call_s_result_names_its_task_and_file() -> None:
    record = {"stdout": "", "backgroundTaskId": "bg1", "backgroundOutputPath": OUTPUT}
    assert events_of(result(record)) == [
        ToolResult(
            tool_use_id="toolu_1", is_error=False, text="running", background_task_id="bg1",
            background_output=OUTPUT,
        )
    ]  # fmt: skip


@pytest.mark.parametrize("record", ["Error: the user denied it", None, {"stdout": "x"}])
def test_a_result_without_a_background_record_is_a_plain_result(record: object) -> None:
    assert events_of(result(record)) == [
        ToolResult(tool_use_id="toolu_1", is_error=False, text="running")
    ]


def test_a_task_starts_and_ends_and_a_terminal_update_ends_it_too() -> None:
    started = TaskStartedMessage(
        subtype="task_started", data={}, task_id="bg1", description="count", uuid="u",
        session_id="s1", tool_use_id="toolu_1", task_type="local_bash",
    )  # fmt: skip
    assert events_of(started) == [
        TaskStarted(
            task_id="bg1", tool_use_id="toolu_1", description="count", task_type="local_bash"
        )
    ]
    notified = TaskNotificationMessage(
        subtype="task_notification", data={}, task_id="bg1", status="completed",
        output_file=OUTPUT, summary="done", uuid="u", session_id="s1", tool_use_id="toolu_1",
    )  # fmt: skip
    assert events_of(notified) == [
        TaskEnded(task_id="bg1", tool_use_id="toolu_1", status="completed", output_file=OUTPUT)
    ]
    killed = TaskUpdatedMessage(
        subtype="task_updated", data={}, task_id="bg1", patch={"status": "killed"}, status="killed"
    )
    assert events_of(killed) == [TaskEnded(task_id="bg1", tool_use_id=None, status="killed")]
    running = TaskUpdatedMessage(
        subtype="task_updated",
        data={},
        task_id="bg1",
        patch={"status": "running"},
        status="running",
    )
    assert events_of(running) == []
