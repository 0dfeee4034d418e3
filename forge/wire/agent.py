"""An agent seat on the socket: its commands' field bags, its updates and its session pieces.

Each command is a struct variant of the `command` verb (`{"prompt": {"key": ..., "text": ...}}`);
`spawn` and `despawn` need `reply_to` and are answered with `SpawnReply`/`DespawnReply` (or
`{"ok": false, "why": ...}`). Updates are numbered on the seat's counter like every other seat
update: `chat_appended{key, msg}` (one conversation message, `ChatMessage`), `prompt_queued{key,
prompt}`, `prompt_lifecycle{key, uuid, phase, outcome}`, `ask_pending{key, ask}`,
`ask_resolved{key, id, outcome}`, `agent_header{key, header}`, `command_lifecycle{key, id, name,
phase, task_id, outcome}`, `context_usage_snapshot{key, context_usage}`,
`slash_commands_changed` and `subagents_changed`; `read_call_output` is answered out of band
(`CallOutput`, `seq: null`). docs/protocol.md says how they differ from the spec's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from forge.wire.seats import Seat

AGENT_COMMANDS = frozenset({"prompt", "answer", "set_model", "set_permission_mode", "set_effort"})
"""Agent commands that send no reply (their effect arrives on the seat's stream); `cancel`,
the spec's own, interrupts an agent seat's turn, and `read_call_output`, the spec's own too,
reads a background call's output."""

AGENT_REPLY_COMMANDS = frozenset({"spawn", "despawn"})
"""Agent commands answered only in their reply, so `reply_to` is required."""

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"]
"""Claude Code's permission modes, as `forge.workers.agent.protocol` names them (the wire sits
below the workers, so it spells them itself; tests/supervisor/agent hold the two equal)."""

Effort = Literal["low", "medium", "high", "xhigh", "max"]
"""Claude Code's effort levels (`claude --effort`)."""

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
    effort: Effort | None = None
    """The effort the CLI starts with (None: its default)."""


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


class SetEffortCommand(_Bag, frozen=True):
    key: Seat
    effort: Effort


class ReadCallOutput(_Bag, frozen=True):
    """`read_call_output{key, id, lines?}`: the newest `lines` of a background call's output."""

    key: Seat
    id: str
    """The call's tool_use id (`toolu_...`), as the conversation shows it."""
    lines: Annotated[int, msgspec.Meta(ge=1, le=2000)] = 200


NoOutput = Literal["no_call", "not_background", "no_path", "unreadable"]
"""Why `call_output` carries no lines: no such call of the seat, a call that did not run in
the background, no file where the task's output goes, a file that may not be read (a link, not
a regular file)."""


class CallOutput(msgspec.Struct, frozen=True, kw_only=True):
    """`call_output`, answered out of band (`seq: null`): the newest lines of the file a
    background call streams its output to, or `reason` why there are none."""

    key: Seat
    id: str
    task_id: str | None
    lines: list[str]
    truncated: bool
    """Older lines were left out (more than asked for, or past the read's byte cap)."""
    running: bool
    """The task had not ended when the file was read."""
    reason: NoOutput | None
    why: str | None
    """A sentence for `reason` (null when lines were read)."""


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


class ContextCategory(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    tokens: int


class ContextUsage(msgspec.Struct, frozen=True, kw_only=True):
    """What the session's context holds (the CLI's `/context`)."""

    total_tokens: int
    max_tokens: int
    percentage: float
    model: str
    categories: list[ContextCategory]


class AgentHeader(msgspec.Struct, frozen=True, kw_only=True):
    """The header fields an agent seat fills (the rest keep their session snapshot values)."""

    model: str | None
    effort: str | None
    """The effort the CLI runs with (null: its default)."""
    permission_mode: str | None
    context_usage: ContextUsage | None
    """The last `context_usage_snapshot` (null until a turn has ended on a shown seat)."""
    turn_in_flight: bool
    agent_session_id: str | None
    """The Claude Code session's id (the header's `session_id` stays the seat-run's epoch)."""


CallPhase = Literal["requested", "asked", "running", "backgrounded", "ended"]
"""A tool call's life (`command_lifecycle.phase`): the model asked for it, a permission ask
holds it, it was allowed, it went on in the background, it ended."""
