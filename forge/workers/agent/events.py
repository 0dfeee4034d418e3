"""What the CLI says, as the agent protocol's events: one SDK message in, its events out.

Pure (no I/O): the session feeds it every message in order and emits what it returns. A
message of a kind forge does not show (rate-limit notes, hook chatter) yields nothing.
"""

from __future__ import annotations

from typing import Any

import msgspec
from claude_agent_sdk import (
    AssistantMessage as SdkAssistantMessage,
)
from claude_agent_sdk import (
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
    UserMessage,
)
from claude_agent_sdk import (
    TextBlock as SdkTextBlock,
)
from claude_agent_sdk import (
    ThinkingBlock as SdkThinkingBlock,
)
from claude_agent_sdk import (
    ToolResultBlock as SdkToolResultBlock,
)
from claude_agent_sdk import (
    ToolUseBlock as SdkToolUseBlock,
)

from forge.ipc.protocol import WorkerEvent
from forge.workers.agent.protocol import (
    AssistantMessage,
    Block,
    Delta,
    ModelUsage,
    Problem,
    Result,
    SessionStarted,
    TaskEnded,
    TaskStarted,
    TextBlock,
    ThinkingBlock,
    ToolResult,
    ToolUseBlock,
    Usage,
)

LOGIN_HINT = (
    "log in with `claude /login` as the user forge runs as, or set ANTHROPIC_API_KEY in the "
    "environment `forge supervise` starts in (forge stores neither)"
)

_REFUSED_STATUSES = frozenset({401, 403})
_TASK_ENDINGS = frozenset({"completed", "failed", "stopped", "killed"})


def events_of(message: Any) -> list[WorkerEvent]:
    """The events one SDK message stands for."""
    if isinstance(message, StreamEvent):
        return _delta(message)
    if isinstance(message, SdkAssistantMessage):
        return _assistant(message)
    if isinstance(message, UserMessage):
        return _tool_results(message)
    if isinstance(message, ResultMessage):
        return [result_event(message)]
    if isinstance(message, SystemMessage):
        return _system(message)
    return []


def credentials_refused(event: WorkerEvent) -> bool:
    """Whether `event` says the model API refused the credentials (the turn cannot succeed: the
    CLI would otherwise retry for minutes)."""
    return isinstance(event, Problem) and event.code == "credentials_refused"


def result_event(message: ResultMessage) -> Result:
    usage = message.usage or {}
    return Result(
        session_id=message.session_id,
        subtype=message.subtype,
        is_error=message.is_error,
        text=message.result,
        num_turns=message.num_turns,
        duration_ms=message.duration_ms,
        usage=msgspec.convert(_counts(usage), Usage),
        cost_usd=message.total_cost_usd,
        model_usage={
            model: ModelUsage(
                input_tokens=int(counts.get("inputTokens", 0)),
                output_tokens=int(counts.get("outputTokens", 0)),
                cache_creation_input_tokens=int(counts.get("cacheCreationInputTokens", 0)),
                cache_read_input_tokens=int(counts.get("cacheReadInputTokens", 0)),
                cost_usd=float(counts.get("costUSD", 0.0)),
            )
            for model, counts in (message.model_usage or {}).items()
        },
        terminal_reason=message.terminal_reason,
    )


def _counts(usage: dict[str, Any]) -> dict[str, int]:
    return {
        name: int(usage.get(name) or 0)
        for name in Usage.__struct_fields__
        if isinstance(usage.get(name, 0), int)
    }


def _delta(message: StreamEvent) -> list[WorkerEvent]:
    event = message.event
    if event.get("type") != "content_block_delta":
        return []
    delta = event.get("delta") or {}
    index = int(event.get("index", 0))
    parent = message.parent_tool_use_id
    if delta.get("type") == "text_delta":
        return [Delta(kind="text", index=index, text=delta["text"], parent_tool_use_id=parent)]
    if delta.get("type") == "thinking_delta":
        return [
            Delta(kind="thinking", index=index, text=delta["thinking"], parent_tool_use_id=parent)
        ]
    return []


def _assistant(message: SdkAssistantMessage) -> list[WorkerEvent]:
    events: list[WorkerEvent] = []
    blocks: list[Block] = []
    for block in message.content:
        if isinstance(block, SdkTextBlock):
            blocks.append(TextBlock(block.text))
        elif isinstance(block, SdkThinkingBlock):
            blocks.append(ThinkingBlock(block.thinking))
        elif isinstance(block, SdkToolUseBlock):
            blocks.append(ToolUseBlock(block.id, block.name, dict(block.input)))
    if message.error is not None:
        said = " ".join(block.text for block in blocks if isinstance(block, TextBlock))
        events.append(_problem(message.error, said))
        return events
    if blocks:
        events.append(
            AssistantMessage(
                blocks=blocks,
                model=message.model,
                message_id=message.message_id,
                parent_tool_use_id=message.parent_tool_use_id,
            )
        )
    return events


def _problem(error: str, said: str) -> Problem:
    """A sentence for an assistant message the CLI marked as an error."""
    words = f" ({said})" if said else ""
    if error == "authentication_failed":
        return Problem(
            code="credentials_refused",
            message=f"the model API refused the credentials{words}: {LOGIN_HINT}",
        )
    if error in ("rate_limit", "server_error"):
        return Problem(
            code="model_unavailable",
            message=f"the model is unavailable now{words}; the turn ended, send the prompt again",
        )
    return Problem(code="api_error", message=f"the model API answered with an error{words}")


def _tool_results(message: UserMessage) -> list[WorkerEvent]:
    if isinstance(message.content, str):
        return []
    # The CLI's own record of the call: a dict, or a string for a refused or failed call.
    record = message.tool_use_result if isinstance(message.tool_use_result, dict) else {}
    task_id, output = record.get("backgroundTaskId"), record.get("backgroundOutputPath")
    return [
        ToolResult(
            tool_use_id=block.tool_use_id,
            is_error=bool(block.is_error),
            text=_text(block.content),
            background_task_id=task_id if isinstance(task_id, str) else None,
            background_output=output if isinstance(output, str) else None,
        )
        for block in message.content
        if isinstance(block, SdkToolResultBlock)
    ]


def _text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(str(part.get("text", "")) for part in content if part.get("type") == "text")


def _task(message: SystemMessage) -> list[WorkerEvent]:
    """A background task's start or end (a terminal `task_updated` ends one too: the CLI
    sometimes sends no notification for a killed task)."""
    if isinstance(message, TaskStartedMessage):
        return [
            TaskStarted(
                task_id=message.task_id,
                tool_use_id=message.tool_use_id,
                description=message.description,
                task_type=message.task_type,
            )
        ]
    if isinstance(message, TaskNotificationMessage):
        return [
            TaskEnded(
                task_id=message.task_id,
                tool_use_id=message.tool_use_id,
                status=str(message.status),
                output_file=message.output_file or None,
            )
        ]
    if isinstance(message, TaskUpdatedMessage) and message.status in _TASK_ENDINGS:
        return [TaskEnded(task_id=message.task_id, tool_use_id=None, status=str(message.status))]
    return []


def _system(message: SystemMessage) -> list[WorkerEvent]:
    data = message.data
    if isinstance(message, TaskStartedMessage | TaskNotificationMessage | TaskUpdatedMessage):
        return _task(message)
    if message.subtype == "init":
        return [
            SessionStarted(
                session_id=str(data.get("session_id", "")),
                model=data.get("model"),
                permission_mode=data.get("permissionMode"),
                cwd=data.get("cwd"),
                tools=[str(tool) for tool in data.get("tools", [])],
                slash_commands=[str(command) for command in data.get("slash_commands", [])],
                agents=[str(agent) for agent in data.get("agents", [])],
            )
        ]
    if message.subtype == "api_retry" and (
        data.get("error") == "authentication_failed"
        or data.get("error_status") in _REFUSED_STATUSES
    ):
        status = data.get("error_status")
        return [
            Problem(
                code="credentials_refused",
                message=f"the model API refused the credentials (HTTP {status}): {LOGIN_HINT}",
            )
        ]
    return []
