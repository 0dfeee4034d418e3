"""What a Messages API request carries: its newest user messages, the tool results in them and
which tool each answers. The model server picks a script's turn with it; tests assert with it.

    results = tool_results(server.requests[1].body)
    assert results[0].tool_name == "Bash" and not results[0].is_error

Every reader takes the decoded JSON body as it came and tolerates any shape (a malformed body
has no user text and no tool results).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from forge.testing.model_script import Script, When


@dataclass(frozen=True)
class ToolResult:
    """A `tool_result` block: the call it answers (and that call's tool, when the request shows
    it), whether it is an error, and its text."""

    tool_use_id: str
    tool_name: str | None
    is_error: bool
    text: str


def messages(body: Any) -> list[dict[str, Any]]:
    """The request's messages that are objects (others are skipped)."""
    found = body.get("messages") if isinstance(body, dict) else None
    return (
        [message for message in found if isinstance(message, dict)]
        if isinstance(found, list)
        else []
    )


def newest_user_messages(body: Any) -> list[dict[str, Any]]:
    """The user messages after the last assistant message: what the model is asked to answer
    (the CLI may put messages of other roles, such as `system`, among or after them)."""
    conversation = messages(body)
    answered = max(
        (index for index, message in enumerate(conversation) if message.get("role") == "assistant"),
        default=-1,
    )
    return [message for message in conversation[answered + 1 :] if message.get("role") == "user"]


def user_text(body: Any) -> str:
    """The text of the newest user messages: string contents and text blocks, joined by lines."""
    return "\n".join(
        text for message in newest_user_messages(body) if (text := _text_of(message.get("content")))
    )


def system_text(body: Any) -> str:
    """The system prompt: a string, or its text blocks joined by lines."""
    return _text_of(body.get("system")) if isinstance(body, dict) else ""


def tool_calls(body: Any) -> dict[str, str]:
    """Every tool call the request's assistant messages show: its id to its tool's name."""
    return {
        block["id"]: block["name"]
        for message in messages(body)
        if message.get("role") == "assistant"
        for block in _blocks(message.get("content"))
        if block.get("type") == "tool_use"
        and isinstance(block.get("id"), str)
        and isinstance(block.get("name"), str)
    }


def tool_results(body: Any) -> list[ToolResult]:
    """The tool results in the newest user messages, in order."""
    names = tool_calls(body)
    return [
        ToolResult(
            tool_use_id=block["tool_use_id"],
            tool_name=names.get(block["tool_use_id"]),
            is_error=block.get("is_error") is True,
            text=_text_of(block.get("content")),
        )
        for message in newest_user_messages(body)
        for block in _blocks(message.get("content"))
        if block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str)
    ]


def meets(when: When, body: Any) -> bool:
    """Whether a request meets a turn's `when`."""
    if when.tool_result is not None and not any(
        result.tool_name == when.tool_result
        and (when.tool_error is None or result.is_error == when.tool_error)
        for result in tool_results(body)
    ):
        return False
    if when.system_text is not None and when.system_text not in system_text(body):
        return False
    return when.user_text is None or when.user_text in user_text(body)


def next_turn(script: Script, played: Collection[int], body: Any) -> int | None:
    """The index of the first turn not yet played whose `when` the request meets, if any."""
    return next(
        (
            index
            for index, turn in enumerate(script.turns)
            if index not in played and meets(turn.when, body)
        ),
        None,
    )


def _blocks(content: Any) -> list[dict[str, Any]]:
    return (
        [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []
    )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        block["text"]
        for block in _blocks(content)
        if block.get("type") == "text" and isinstance(block.get("text"), str)
    )
