"""An agent seat on the socket: its commands' field bags, its updates and its session pieces.

Each command is a struct variant of the `command` verb (`{"prompt": {"key": ..., "text": ...}}`);
`spawn` and `despawn` need `reply_to` and are answered with `SpawnReply`/`DespawnReply` (or
`{"ok": false, "why": ...}`). Updates are numbered on the seat's counter like every other seat
update: `chat_appended{key, msg}` (one conversation message, `ChatMessage`), `prompt_queued{key,
prompt}`, `prompt_lifecycle{key, uuid, phase, outcome}`, `ask_pending{key, ask}`,
`ask_resolved{key, id, outcome}` and `agent_header{key, header}`. docs/protocol.md says how they
differ from the spec's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from forge.wire.seats import Seat

AGENT_COMMANDS = frozenset({"prompt", "answer", "set_model", "set_permission_mode"})
"""Agent commands that send no reply (their effect arrives on the seat's stream); `cancel`,
the spec's own, interrupts an agent seat's turn."""

AGENT_REPLY_COMMANDS = frozenset({"spawn", "despawn"})
"""Agent commands answered only in their reply, so `reply_to` is required."""

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"]
"""Claude Code's permission modes, as `forge.workers.agent.protocol` names them (the wire sits
below the workers, so it spells them itself; tests/supervisor/agent hold the two equal)."""

Text = Annotated[str, msgspec.Meta(min_length=1, max_length=1_000_000)]
Model = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:\[\]-]{0,99}$")]


class _Bag(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A command's fields; an unknown field is refused by name."""


class Spawn(_Bag, frozen=True):
    """Start an agent on a seat (`key` names project and label)."""

    key: Seat
    worktree: str | None = None
    """A directory among the project's git worktrees (`git worktree list`) to run in; None: the
    project's own directory."""
    model: Model | None = None
    permission_mode: PermissionMode = "default"


class Despawn(_Bag, frozen=True):
    key: Seat


class PromptCommand(_Bag, frozen=True):
    key: Seat
    text: Text
    source: Literal["composer", "dictation", "cli"] = "composer"


class Cancel(_Bag, frozen=True):
    key: Seat


class Deny(_Bag, frozen=True):
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]


class Choose(_Bag, frozen=True):
    answers: dict[str, list[str]]
    """Each question's text to the option labels chosen."""


class AnswerCommand(_Bag, frozen=True):
    """`answer` is `"allow_once"`, `"allow_always"`, `{"deny": {"reason"}}` or `{"choose":
    {"answers"}}` (externally tagged, as the spec's enums are)."""

    key: Seat
    id: str
    answer: Literal["allow_once", "allow_always"] | dict[str, Any]


class SetModelCommand(_Bag, frozen=True):
    key: Seat
    model: Model | None = None


class SetPermissionModeCommand(_Bag, frozen=True):
    key: Seat
    mode: PermissionMode


class SpawnReply(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool = True
    key: Seat
    session_id: str | None
    """The Claude Code session the seat runs (what a restart resumes); None until the CLI names
    it (its first turn)."""
    cwd: str


class DespawnReply(msgspec.Struct, frozen=True, kw_only=True):
    ok: bool = True
    key: Seat
    killed: list[int]
    """Processes the CLI left that were killed after it ended."""


# --- conversation messages (`chat_appended.msg`, a turn's `messages`) ---------------------


class UserMessage(msgspec.Struct, frozen=True, kw_only=True, tag="user", tag_field="type"):
    """A person's prompt. The CLI does not echo a prompt, so the server forges this frame."""

    uuid: str | None
    text: str


class TextBlock(msgspec.Struct, frozen=True, tag="text", tag_field="type"):
    text: str


class ThinkingBlock(msgspec.Struct, frozen=True, tag="thinking", tag_field="type"):
    thinking: str


class ToolUseBlock(msgspec.Struct, frozen=True, tag="tool_use", tag_field="type"):
    id: str
    name: str
    input: dict[str, Any]


Block = TextBlock | ThinkingBlock | ToolUseBlock


class AssistantMessage(
    msgspec.Struct, frozen=True, kw_only=True, tag="assistant", tag_field="type"
):
    """Whole blocks of the model's message."""

    message_id: str | None
    blocks: list[Block]


class ToolResultMessage(
    msgspec.Struct, frozen=True, kw_only=True, tag="tool_result", tag_field="type"
):
    tool_use_id: str
    is_error: bool
    text: str


class DeltaMessage(msgspec.Struct, frozen=True, kw_only=True, tag="delta", tag_field="type"):
    """A token append of the turn in flight (live only: a page carries the whole blocks)."""

    kind: Literal["text", "thinking"]
    index: int
    text: str


class ResultMessage(msgspec.Struct, frozen=True, kw_only=True, tag="result", tag_field="type"):
    """A turn's end as the CLI reports it (live only: the transcript keeps no result row)."""

    subtype: str
    is_error: bool
    text: str | None
    input_tokens: int
    output_tokens: int
    cost_usd: float | None


ChatMessage = UserMessage | AssistantMessage | ToolResultMessage | DeltaMessage | ResultMessage


class Turn(msgspec.Struct, frozen=True, kw_only=True):
    """One turn: a person's prompt and what the agent did with it (a session's first rows
    before any prompt form a turn of their own)."""

    key: str | None
    messages: list[ChatMessage]


# --- queue, asks and header -----------------------------------------------------------------


class QueuedPrompt(msgspec.Struct, frozen=True, kw_only=True):
    """A `state.queue` row: a prompt waiting for the turn ahead of it."""

    uuid: str
    source: str
    text: str


class PermissionCard(msgspec.Struct, frozen=True, kw_only=True, tag="permission", tag_field="kind"):
    id: str
    """The tool call's id (`toolu_...`), as the conversation shows it."""
    tool_name: str
    input: dict[str, Any]
    title: str | None
    decision_reason: str | None


class QuestionOption(msgspec.Struct, frozen=True, kw_only=True):
    label: str
    description: str


class Question(msgspec.Struct, frozen=True, kw_only=True):
    question: str
    header: str
    options: list[QuestionOption]
    multi_select: bool


class QuestionCard(msgspec.Struct, frozen=True, kw_only=True, tag="question", tag_field="kind"):
    id: str
    questions: list[Question]


AskCard = PermissionCard | QuestionCard


class AgentHeader(msgspec.Struct, frozen=True, kw_only=True):
    """The header fields an agent seat fills (the rest keep their session snapshot values)."""

    model: str | None
    permission_mode: str | None
    turn_in_flight: bool
    agent_session_id: str | None
    """The Claude Code session's id (the header's `session_id` stays the seat-run's epoch)."""
