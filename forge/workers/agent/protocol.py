"""The agent worker's protocol: one Claude Code session on one seat, as typed requests and events.

The supervisor imports this module and nothing else of `forge.workers.agent`; it imports nothing
of the agent SDK either, so a supervisor without `forge[agent]` still reads it.

- Config (`SeatConfig`): the seat's directory, the CLI to run (None: the SDK's bundled one, else
  `claude` on PATH), the first model and permission mode. The SDK and a CLI are checked before
  hello: without them the worker exits with a sentence naming the install command (a
  `failed` row, never restarted).
- Requests: `Start` (a fresh session, or one resumed by id), `Prompt` (queued while a turn runs),
  `Interrupt`, `Answer` (an ask's decision), `SetPermissionMode`, `SetModel`, `SetEffort`,
  `GetContextUsage`, `Listeners` (who hears the seat: what `voice__say` answers the model),
  `Stop` (the CLI and every process it started end before the answer).
- Events, in the order the CLI produced them: `SessionStarted`, `PromptLifecycle`
  (queued / started / ended), `Delta` (text or thinking as it streams), `AssistantMessage` (whole
  blocks: text, thinking, tool calls), `ToolResult`, `TaskStarted` and `TaskEnded` (background
  work), `PermissionAsk` and `QuestionAsk` (held until an `Answer`), `AskEnded`, `Result` (usage
  and cost), `Problem` (a sentence), `Say` (the model called forge's `mcp__forge__voice__say`: a
  cleaned line for the seat's listeners).

An ask's id is the tool call's id (`toolu_...`): the one the conversation shows.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from forge.ipc.policy import LifecycleTimings
from forge.ipc.protocol import WorkerEvent, WorkerProtocol, WorkerRequest
from forge.wire.agent import ContextUsage

INSTALL_COMMAND = "pip install 'forge-supervisor[agent]'"
"""What brings the agent SDK (whose wheel bundles the Claude Code CLI); named by refusals."""

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"]
"""Claude Code's permission modes (`claude --permission-mode`)."""

Effort = Literal["low", "medium", "high", "xhigh", "max"]
"""Claude Code's effort levels (`claude --effort`): how hard the model thinks."""

PromptText = Annotated[str, msgspec.Meta(min_length=1, max_length=1_000_000)]

SAY_MAX_CHARS = 1000
"""The most of one `voice__say` line that is spoken (about a minute of speech): an agent's
update is a sentence or two, and a clip is sent whole to every listener."""


class SeatConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One agent worker's settings (`WorkerSpec.config`)."""

    cwd: str
    """The seat's directory (its worktree where it has one): the CLI runs there."""
    cli_path: str | None = None
    """`[agent] cli_path`: a `claude` of the person's own; None is the SDK's bundled CLI."""
    model: str | None = None
    """The model to start with; None is the CLI's default."""
    permission_mode: PermissionMode = "default"
    effort: Effort | None = None
    """The effort to start with; None is the CLI's default."""


# --- requests and their answers ---------------------------------------------------------


class Started(msgspec.Struct, frozen=True, kw_only=True):
    cli_path: str
    """The CLI that runs."""
    resumed: str | None
    """The session id resumed, or None for a fresh session (its id comes in `SessionStarted`)."""


class Start(WorkerRequest[Started], tag="start", frozen=True):
    """Start the CLI; answered once it has initialised. Refused as `already_started` while a
    session runs, `cli_failed` when the CLI cannot start (the sentence says why)."""

    session_id: str | None = None
    """Resume this session (its transcript in the CLI's config dir); None starts a new one."""
    effort: Effort | None = None
    """The effort to run with, when it moved since the worker's config was written (a
    `SetEffort` before the worker was restarted); None keeps the config's."""


class PromptAccepted(msgspec.Struct, frozen=True, kw_only=True):
    prompt_id: int
    """Numbers this worker's prompts; `PromptLifecycle` events carry it."""
    queued: int
    """Prompts ahead of it (0: it started at once)."""


class Prompt(WorkerRequest[PromptAccepted], tag="prompt", frozen=True):
    """Send the agent a prompt; while a turn runs it waits in the queue and starts when the
    turns ahead of it end. Refused as `not_started` before `Start`."""

    text: PromptText


class Interrupted(msgspec.Struct, frozen=True, kw_only=True):
    interrupted: bool
    """False when no turn was running (nothing to interrupt)."""


class Interrupt(WorkerRequest[Interrupted], tag="interrupt", frozen=True):
    """Interrupt the running turn (the CLI ends it as interrupted; a pending ask is withdrawn).
    Queued prompts stay queued."""


class PermissionRule(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    tool_name: str
    rule_content: str | None = None
    """What the rule matches within the tool (`npm test` for Bash); None: every use."""


class PermissionUpdate(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A change to the session's permissions, as Claude Code names them (its suggestions come
    in `PermissionAsk.suggestions`)."""

    type: Literal[
        "addRules", "replaceRules", "removeRules", "setMode", "addDirectories", "removeDirectories"
    ]
    rules: list[PermissionRule] | None = None
    behavior: Literal["allow", "deny", "ask"] | None = None
    mode: PermissionMode | None = None
    directories: list[str] | None = None
    destination: Literal["userSettings", "projectSettings", "localSettings", "session"] = "session"


class AllowOnce(msgspec.Struct, frozen=True, tag="allow_once"):
    """Run this call; ask again next time."""


class AllowAlways(msgspec.Struct, frozen=True, tag="allow_always"):
    """Run this call and apply `updates` (None: the CLI's own suggestions for the ask)."""

    updates: list[PermissionUpdate] | None = None


class Deny(msgspec.Struct, frozen=True, tag="deny"):
    """Refuse the call; the model reads `reason` as the tool's error."""

    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]
    interrupt: bool = False
    """Also end the turn."""


class Choose(msgspec.Struct, frozen=True, tag="choose"):
    """A question's answers: each question's text to the labels chosen (one unless the
    question is multi-select; a label the options do not offer is the person's own words)."""

    answers: dict[str, list[str]]


Decision = AllowOnce | AllowAlways | Deny | Choose


class Answered(msgspec.Struct, frozen=True, kw_only=True):
    ask_id: str


class Answer(WorkerRequest[Answered], tag="answer", frozen=True):
    """Decide a pending ask. Refused as `unknown_ask` when no ask of that id waits (answered
    already, withdrawn, or never raised), `wrong_answer` when the decision does not fit the ask
    (choices for a permission ask, a question left out)."""

    ask_id: str
    decision: Decision


class SetPermissionMode(WorkerRequest[None], tag="set_permission_mode", frozen=True):
    mode: PermissionMode


class SetModel(WorkerRequest[None], tag="set_model", frozen=True):
    model: str | None = None
    """None: the CLI's default model."""


class SetEffort(WorkerRequest[None], tag="set_effort", frozen=True):
    """Change the effort. The CLI takes it only as it starts, so the worker restarts it on the
    same session (resumed by id) between turns: refused as `turn_running` while a turn runs and
    as `tasks_running` while a background task would end with the CLI."""

    effort: Effort


class GetContextUsage(WorkerRequest[ContextUsage], tag="get_context_usage", frozen=True):
    """What the session's context holds now (the CLI's `/context`)."""


class Listeners(WorkerRequest[None], tag="listeners", frozen=True):
    """Who hears the seat now, sent on every change and after each `Start`: what `voice__say`
    answers the model ("spoken to 2 listeners", "no one is listening")."""

    listeners: Annotated[int, msgspec.Meta(ge=0)]
    """Clients with voice on for the seat."""
    speech: bool
    """Whether the supervisor can speak at all (`[tts] enabled`)."""


class Stopped(msgspec.Struct, frozen=True, kw_only=True):
    killed: list[int]
    """Pids of the CLI's processes that outlived its own exit and were killed."""


class Stop(WorkerRequest[Stopped], tag="stop", frozen=True):
    """End the session: pending asks are withdrawn, queued prompts dropped, the CLI closed and
    every process it started killed before the answer. `Start` may follow."""


# --- events -------------------------------------------------------------------------------


class SessionStarted(WorkerEvent, tag="session_started", frozen=True):
    """The CLI's session: its id (what `Start` resumes), model, mode and what it offers. The
    CLI says it as each turn starts, so it also carries a change of model or mode."""

    session_id: str
    model: str | None
    permission_mode: str | None
    cwd: str | None
    tools: list[str]
    slash_commands: list[str]
    agents: list[str] = msgspec.field(default_factory=list)
    """The subagent types the `Task` tool offers."""


PromptPhase = Literal["queued", "started", "ended"]
PromptOutcome = Literal["completed", "interrupted", "failed", "dropped"]


class PromptLifecycle(WorkerEvent, tag="prompt_lifecycle", frozen=True):
    prompt_id: int
    phase: PromptPhase
    text: str
    outcome: PromptOutcome | None = None
    """Set when `phase` is "ended": how ("dropped": stopped before it started)."""


class Delta(WorkerEvent, tag="delta", frozen=True):
    """A piece of a block as the model streams it."""

    kind: Literal["text", "thinking"]
    index: int
    """The block's index in its message."""
    text: str
    parent_tool_use_id: str | None = None
    """Set inside a subagent: the Task call it works for."""


class TextBlock(msgspec.Struct, frozen=True, tag="text"):
    text: str


class ThinkingBlock(msgspec.Struct, frozen=True, tag="thinking"):
    thinking: str


class ToolUseBlock(msgspec.Struct, frozen=True, tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any]


Block = TextBlock | ThinkingBlock | ToolUseBlock


class AssistantMessage(WorkerEvent, tag="assistant_message", frozen=True):
    """Whole blocks of the model's message (the CLI may send one message's blocks in several)."""

    blocks: list[Block]
    model: str
    message_id: str | None = None
    parent_tool_use_id: str | None = None


class ToolResult(WorkerEvent, tag="tool_result", frozen=True):
    tool_use_id: str
    is_error: bool
    text: str
    """The result's text blocks joined (an image block is left out)."""
    background_task_id: str | None = None
    """Set when the call went on in the background (`run_in_background`): its task's id."""
    background_output: str | None = None
    """The file the background task's output streams to, as the CLI names it."""


class TaskStarted(WorkerEvent, tag="task_started", frozen=True):
    """A task the CLI runs beside the turn (a background command, a subagent) started."""

    task_id: str
    tool_use_id: str | None
    description: str
    task_type: str | None = None


class TaskEnded(WorkerEvent, tag="task_ended", frozen=True):
    """A task ended: `status` is the CLI's (completed, failed, stopped, killed)."""

    task_id: str
    tool_use_id: str | None
    status: str
    output_file: str | None = None


class PermissionAsk(WorkerEvent, tag="permission_ask", frozen=True):
    """The CLI asks whether a tool call may run; it waits until `Answer` (or a withdrawal)."""

    ask_id: str
    tool_name: str
    input: dict[str, Any]
    title: str | None = None
    """Claude Code's own sentence ("Claude wants to run ..."), when it gives one."""
    description: str | None = None
    decision_reason: str | None = None
    blocked_path: str | None = None
    suggestions: list[PermissionUpdate] = msgspec.field(default_factory=list)
    """What "allow always" applies unless its answer names other updates."""


class QuestionOption(msgspec.Struct, frozen=True, kw_only=True):
    label: str
    description: str = ""


class Question(msgspec.Struct, frozen=True, kw_only=True):
    question: str
    header: str
    options: list[QuestionOption]
    multi_select: bool = msgspec.field(default=False, name="multiSelect")
    """AskUserQuestion's input spells it `multiSelect`."""


class QuestionAsk(WorkerEvent, tag="question_ask", frozen=True):
    """The model asks the person (AskUserQuestion); answered with `Choose`."""

    ask_id: str
    questions: list[Question]


class AskEnded(WorkerEvent, tag="ask_ended", frozen=True):
    ask_id: str
    outcome: Literal["answered", "withdrawn"]
    """"withdrawn": the turn was interrupted or the session stopped before an answer."""


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


class ModelUsage(msgspec.Struct, frozen=True, kw_only=True):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float = 0.0


class Result(WorkerEvent, tag="result", frozen=True):
    """A turn's end, as the CLI reports it."""

    session_id: str
    subtype: str
    """"success", "error_during_execution" (interrupted), "error_max_turns", ..."""
    is_error: bool
    text: str | None
    num_turns: int
    duration_ms: int
    usage: Usage
    cost_usd: float | None
    model_usage: dict[str, ModelUsage]
    terminal_reason: str | None = None


ProblemCode = Literal[
    "credentials_refused",
    "model_unavailable",
    "api_error",
    "cli_exited",
    "callback_failed",
    "session_not_recorded",
]


class Problem(WorkerEvent, tag="problem", frozen=True):
    """Something went wrong, as a sentence a person can act on."""

    code: ProblemCode
    message: str


class Say(WorkerEvent, tag="say", frozen=True):
    """The model called `mcp__forge__voice__say` while someone listens: speak `text` on the seat.
    The worker has cleaned it (one line, no control characters) and cut it to
    `SAY_MAX_CHARS`; it is words for the speech engine, never a command's argument."""

    text: Annotated[str, msgspec.Meta(min_length=1, max_length=SAY_MAX_CHARS)]


AGENT = WorkerProtocol(
    kind="agent",
    module="forge.workers.agent",
    # `setup` imports the agent SDK (6.4 s measured on a 2-core machine at load 26), and ending a
    # session closes the CLI (seconds mid-turn) and its tools.
    timings=LifecycleTimings(hello_timeout=60.0, stop_timeout=15.0),
    requests=(
        Start,
        Prompt,
        Interrupt,
        Answer,
        SetPermissionMode,
        SetModel,
        SetEffort,
        GetContextUsage,
        Listeners,
        Stop,
    ),
    events=(
        SessionStarted,
        PromptLifecycle,
        Delta,
        AssistantMessage,
        ToolResult,
        TaskStarted,
        TaskEnded,
        PermissionAsk,
        QuestionAsk,
        AskEnded,
        Result,
        Problem,
        Say,
    ),
)
