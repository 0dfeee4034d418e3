"""An agent seat's conversation read from the CLI's own transcript, cut into turns and pages.

Claude Code writes every session to `<config dir>/projects/<cwd slug>/<session id>.jsonl`, one
JSON row per message. The transcript is the record: the session snapshot's newest turns and
each `more` page are read from it, so a supervisor restart loses nothing and two readers agree.
Everything here but `find_transcript`/`read_rows` is free of I/O.

A turn opens on a person's prompt (a user row whose content is text, not a tool result); the
rows before the first prompt form a turn of their own. A page's cursor is the index of the row
its first turn opens on: `more{before: cursor}` returns the turns that open above that row, and
a cursor of None means nothing is above.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from forge.wire.agent import (
    AssistantMessage,
    Block,
    ChatMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultMessage,
    ToolUseBlock,
    Turn,
    UserMessage,
)

PAGE_TURNS = 20
"""Turns in the snapshot's conversation and in a `more` page unless it asks for fewer."""
MAX_PAGE_TURNS = 100

_decoder = msgspec.json.Decoder(dict[str, Any])


def config_dir(env: os._Environ[str] | dict[str, str]) -> Path:
    """Where the CLI keeps its transcripts: `CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    configured = env.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured)
    return Path(env.get("HOME") or Path.home()) / ".claude"


def find_transcript(config: Path, session_id: str) -> Path | None:
    """The session's transcript file under any project slug, or None when there is none."""
    if not session_id or "/" in session_id or session_id.startswith("."):
        return None
    found = sorted((config / "projects").glob(f"*/{session_id}.jsonl"))
    return found[0] if found else None


def read_rows(path: Path | None) -> list[dict[str, Any]]:
    """The transcript's rows (an unreadable line is skipped: the CLI may be writing it)."""
    if path is None:
        return []
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return []
    rows: list[dict[str, Any]] = []
    for line in lines:
        try:
            rows.append(_decoder.decode(line))
        except msgspec.DecodeError:
            continue
    return rows


@dataclass(frozen=True)
class Row:
    """One transcript row as conversation messages, and whether it opens a turn."""

    index: int
    messages: list[ChatMessage]
    opens_turn: bool


def messages_of(rows: Iterable[dict[str, Any]]) -> list[Row]:
    """The rows that carry conversation (user and assistant rows of the main thread)."""
    kept: list[Row] = []
    for index, row in enumerate(rows):
        if row.get("type") not in ("user", "assistant") or row.get("isSidechain"):
            continue
        if row.get("isMeta"):
            continue
        message = row.get("message")
        if not isinstance(message, dict):
            continue
        if row["type"] == "assistant":
            blocks = _blocks(message.get("content"))
            if blocks:
                kept.append(
                    Row(
                        index,
                        [AssistantMessage(message_id=message.get("id"), blocks=blocks)],
                        False,
                    )
                )
            continue
        content = message.get("content")
        results = _tool_results(content)
        if results:
            kept.append(Row(index, list(results), False))
            continue
        text = _text(content)
        if text:
            kept.append(Row(index, [UserMessage(uuid=row.get("uuid"), text=text)], True))
    return kept


def page(
    rows: list[Row], before: int | None, turns: int = PAGE_TURNS
) -> tuple[list[Turn], int | None]:
    """The newest `turns` turns that open above row `before` (None: the end), and the cursor
    above them (None when the page reaches the first row)."""
    starts = _turn_starts(rows)
    if before is not None:
        starts = [start for start in starts if rows[start].index < before]
    chosen = starts[-turns:] if turns > 0 else []
    if not chosen:
        return [], None
    all_starts = _turn_starts(rows)
    result: list[Turn] = []
    for start in chosen:
        following = [s for s in all_starts if s > start]
        end = following[0] if following else len(rows)
        opening = rows[start].messages[0]
        key = opening.uuid if isinstance(opening, UserMessage) else None
        result.append(Turn(key=key, messages=[m for row in rows[start:end] for m in row.messages]))
    first = chosen[0]
    cursor = rows[first].index if first > 0 else None
    return result, cursor


def _turn_starts(rows: list[Row]) -> list[int]:
    starts = [position for position, row in enumerate(rows) if row.opens_turn]
    if rows and (not starts or starts[0] != 0):
        starts.insert(0, 0)
    return starts


def _blocks(content: Any) -> list[Block]:
    if not isinstance(content, list):
        return []
    blocks: list[Block] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            blocks.append(TextBlock(block["text"]))
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            blocks.append(ThinkingBlock(block["thinking"]))
        elif kind == "tool_use":
            blocks.append(
                ToolUseBlock(str(block.get("id")), str(block.get("name")), block.get("input") or {})
            )
    return blocks


def _tool_results(content: Any) -> list[ToolResultMessage]:
    if not isinstance(content, list):
        return []
    return [
        ToolResultMessage(
            tool_use_id=str(block.get("tool_use_id")),
            is_error=bool(block.get("is_error")),
            text=_text(block.get("content")),
        )
        for block in content
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def _text(content: Any) -> str:
    """A content's text: a string as it is, else its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        )
    return ""
