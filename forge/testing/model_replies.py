"""What the model server sends, as the Messages API shapes it: a turn as server-sent events
(`message_start`, per block `content_block_start` / `content_block_delta`s / `content_block_stop`,
`message_delta` with the usage, `message_stop`) or as one JSON message, an error body, and a
count_tokens answer. Pure: the server only writes these bytes.

Ids are the script's, so tests can name them: a tool call is `toolu_forge_<turn>_<block>`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from forge.testing.model_script import Block, Text, Thinking, ToolUse, Turn, Usage

# What a thinking block carries as its signature: opaque to the CLI, which sends it back.
THINKING_SIGNATURE = "Zm9yZ2UtbW9kZWwtc2VydmVy"


@dataclass(frozen=True)
class Event:
    """One server-sent event; `delta` marks a `content_block_delta` (faults count those)."""

    name: str
    data: dict[str, Any]

    @property
    def delta(self) -> bool:
        return self.name == "content_block_delta"

    def encode(self) -> bytes:
        return f"event: {self.name}\ndata: {json.dumps(self.data)}\n\n".encode()


def tool_use_id(turn: int, block: int) -> str:
    """The id of the tool call that is block `block` of turn `turn`."""
    return f"toolu_forge_{turn}_{block}"


def stream_events(
    turn: Turn, *, turn_index: int, message_id: str, model: str, chunk: int
) -> list[Event]:
    """The events that stream `turn`, text cut into `chunk`-character deltas."""
    start_usage = {**_input_usage(turn.usage), "output_tokens": 1}
    events = [
        Event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        )
    ]
    for index, block in enumerate(turn.blocks):
        events.append(
            Event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": _empty(block, turn_index, index),
                },
            )
        )
        events.extend(
            Event(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
            for delta in _deltas(block, chunk)
        )
        events.append(Event("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        Event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": turn.stop_reason, "stop_sequence": None},
                "usage": usage_json(turn.usage),
            },
        )
    )
    events.append(Event("message_stop", {"type": "message_stop"}))
    return events


def message_json(turn: Turn, *, turn_index: int, message_id: str, model: str) -> dict[str, Any]:
    """`turn` as one message, for a request that did not ask to stream."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [_whole(block, turn_index, index) for index, block in enumerate(turn.blocks)],
        "stop_reason": turn.stop_reason,
        "stop_sequence": None,
        "usage": usage_json(turn.usage),
    }


def usage_json(usage: Usage) -> dict[str, Any]:
    """The usage object of a finished message."""
    return {**_input_usage(usage), "output_tokens": usage.output_tokens}


def error_json(kind: str, message: str, request_id: str) -> dict[str, Any]:
    """An error body as the API sends it."""
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}


def count_tokens_json(scripted: int | None, body_size: int) -> dict[str, Any]:
    """A count_tokens answer: the script's number, or about a token per four bytes of request."""
    return {"input_tokens": scripted if scripted is not None else max(1, body_size // 4)}


def _input_usage(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
    }


def _empty(block: Block, turn: int, index: int) -> dict[str, Any]:
    """The block as `content_block_start` opens it, before any delta."""
    if isinstance(block, Text):
        return {"type": "text", "text": ""}
    if isinstance(block, Thinking):
        return {"type": "thinking", "thinking": "", "signature": ""}
    return {"type": "tool_use", "id": tool_use_id(turn, index), "name": block.name, "input": {}}


def _whole(block: Block, turn: int, index: int) -> dict[str, Any]:
    if isinstance(block, Text):
        return {"type": "text", "text": block.text}
    if isinstance(block, Thinking):
        return {"type": "thinking", "thinking": block.thinking, "signature": THINKING_SIGNATURE}
    return {
        "type": "tool_use",
        "id": tool_use_id(turn, index),
        "name": block.name,
        "input": block.input,
    }


def _deltas(block: Block, chunk: int) -> list[dict[str, Any]]:
    if isinstance(block, Text):
        return [{"type": "text_delta", "text": part} for part in _pieces(block.text, chunk)]
    if isinstance(block, Thinking):
        return [
            *(
                {"type": "thinking_delta", "thinking": part}
                for part in _pieces(block.thinking, chunk)
            ),
            {"type": "signature_delta", "signature": THINKING_SIGNATURE},
        ]
    assert isinstance(block, ToolUse)
    return [
        {"type": "input_json_delta", "partial_json": part}
        for part in _pieces(json.dumps(block.input), chunk)
    ]


def _pieces(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)] or [""]
