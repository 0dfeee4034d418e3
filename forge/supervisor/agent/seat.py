"""One agent seat as clients see it, moved by its worker's events: free of I/O.

`AgentSeat.apply` takes one worker event and returns the seat updates it means (variant and
body, in order), which the service numbers on the seat's counter. The seat keeps what a
snapshot reads: the header, the prompt queue, the pending asks and what home's row says.

Prompts are named by a uuid the supervisor mints when a client sends one; the worker numbers
them by its own `prompt_id`, counted per worker generation. Prompts are sent to the worker in
the order they are submitted here, and the worker announces each (queued or started) before it
answers, so the first announcement of a `prompt_id` not yet bound takes the oldest unbound
submission.
"""

from __future__ import annotations

import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from forge.ipc.protocol import WorkerEvent
from forge.wire import agent as wire
from forge.wire.seats import Seat
from forge.workers.agent import protocol as worker

Update = tuple[str, dict[str, Any]]
Lifecycle = Literal["starting", "idle", "working", "waiting", "crashed", "failed", "stopped"]


@dataclass
class _Prompt:
    uuid: str
    source: str
    text: str


@dataclass
class _Call:
    """A tool call the seat has seen: its tool, and its background task when it has one."""

    name: str
    task_id: str | None = None
    session_id: str | None = None
    """The session whose task folder holds the output."""
    output_file: str | None = None
    running: bool = False
    task_ended: bool = False
    """The task's end was seen (the CLI may report it twice, and before the call's result)."""


KEPT_TASKS = 256
"""Background calls a seat remembers for `read_call_output` (the oldest go first)."""

_TASK_OUTCOMES = {"completed": "ok", "failed": "error"}


@dataclass
class AgentSeat:
    key: Seat
    cwd: str
    model: str | None = None
    permission_mode: str | None = None
    effort: str | None = None
    context_usage: wire.ContextUsage | None = None
    slash_commands: list[str] = field(default_factory=list)
    subagents: list[str] = field(default_factory=list)
    calls: dict[str, _Call] = field(default_factory=dict)
    """Tool calls by id, for `command_lifecycle` and `read_call_output`."""
    session_id: str | None = None
    """The Claude Code session (what a restarted worker resumes)."""
    lifecycle: Lifecycle = "starting"
    problem: str | None = None
    """The last problem's sentence (a refused credential, a crash), until a turn completes."""
    turn_in_flight: bool = False
    queue: list[wire.QueuedPrompt] = field(default_factory=list)
    asks: dict[str, wire.AskCard] = field(default_factory=dict)
    _unbound: deque[_Prompt] = field(default_factory=deque)
    _bound: dict[int, _Prompt] = field(default_factory=dict)

    # --- what the supervisor does ---------------------------------------------------------

    def submit(self, text: str, source: str) -> str:
        """A prompt about to be sent to the worker: its uuid."""
        prompt = _Prompt(str(uuid.uuid4()), source, text)
        self._unbound.append(prompt)
        return prompt.uuid

    def refused(self, prompt_uuid: str) -> None:
        """The worker refused the prompt just submitted: forget it."""
        self._unbound = deque(p for p in self._unbound if p.uuid != prompt_uuid)

    def worker_lost(self, why: str) -> list[Update]:
        """The worker ended unasked: its prompts and asks went with it."""
        updates: list[Update] = []
        for prompt in [*self._bound.values(), *self._unbound]:
            updates.append(self._lifecycle_update(prompt.uuid, "ended", "failed"))
        for ask_id in list(self.asks):
            updates.append(self._ask_resolved(ask_id, "withdrawn"))
        self._bound.clear()
        self._unbound.clear()
        self.queue.clear()
        self.turn_in_flight = False
        self.problem = why
        self.lifecycle = "crashed"
        updates.append(self.header_update())
        return updates

    def set_lifecycle(self, lifecycle: Lifecycle, problem: str | None = None) -> None:
        self.lifecycle = lifecycle
        if problem is not None:
            self.problem = problem

    # --- the worker's events ---------------------------------------------------------------

    def apply(self, event: WorkerEvent) -> list[Update]:
        match event:
            case worker.SessionStarted():
                self.session_id = event.session_id
                self.model = event.model or self.model
                self.permission_mode = event.permission_mode or self.permission_mode
                self.lifecycle = "working" if self.turn_in_flight else "idle"
                return [self.header_update(), *self._catalogues(event)]
            case worker.PromptLifecycle():
                return self._prompt_moved(event)
            case worker.Delta() if event.parent_tool_use_id is None:
                return [
                    self._chat(
                        wire.DeltaMessage(kind=event.kind, index=event.index, text=event.text)
                    )
                ]
            case worker.AssistantMessage() if event.parent_tool_use_id is None:
                self.model = event.model or self.model
                blocks = [_block(block) for block in event.blocks]
                chat = self._chat(wire.AssistantMessage(message_id=event.message_id, blocks=blocks))
                return [chat, *self._calls_requested(event.blocks)]
            case worker.ToolResult():
                message = wire.ToolResultMessage(
                    tool_use_id=event.tool_use_id, is_error=event.is_error, text=event.text
                )
                return [self._chat(message), *self._call_result(event)]
            case worker.TaskStarted() | worker.TaskEnded():
                return self._task_moved(event)
            case worker.PermissionAsk():
                card: wire.AskCard = wire.PermissionCard(
                    id=event.ask_id,
                    tool_name=event.tool_name,
                    input=event.input,
                    title=event.title,
                    decision_reason=event.decision_reason,
                )
                return [*self._ask_raised(card), *self._call_moved(event.ask_id, "asked")]
            case worker.QuestionAsk():
                questions = [
                    wire.Question(
                        question=q.question,
                        header=q.header,
                        options=[
                            wire.QuestionOption(label=o.label, description=o.description)
                            for o in q.options
                        ],
                        multi_select=q.multi_select,
                    )
                    for q in event.questions
                ]
                card = wire.QuestionCard(id=event.ask_id, questions=questions)
                return [*self._ask_raised(card), *self._call_moved(event.ask_id, "asked")]
            case worker.AskEnded():
                if event.ask_id not in self.asks:
                    return []
                return [self._ask_resolved(event.ask_id, event.outcome)]
            case worker.Result():
                self.session_id = event.session_id
                result = wire.ResultMessage(
                    subtype=event.subtype,
                    is_error=event.is_error,
                    text=event.text,
                    input_tokens=event.usage.input_tokens,
                    output_tokens=event.usage.output_tokens,
                    cost_usd=event.cost_usd,
                )
                return [self._chat(result)]
            case worker.Problem():
                self.problem = event.message
                return [
                    (
                        "agent_problem",
                        {"key": self.key, "code": event.code, "message": event.message},
                    )
                ]
        return []

    # --- what snapshots read ---------------------------------------------------------------

    def header(self) -> wire.AgentHeader:
        return wire.AgentHeader(
            model=self.model,
            effort=self.effort,
            permission_mode=self.permission_mode,
            context_usage=self.context_usage,
            turn_in_flight=self.turn_in_flight,
            agent_session_id=self.session_id,
        )

    def header_update(self) -> Update:
        return ("agent_header", {"key": self.key, "header": self.header()})

    def context_measured(self, usage: wire.ContextUsage) -> Update:
        self.context_usage = usage
        return ("context_usage_snapshot", {"key": self.key, "context_usage": usage})

    def pending_asks(self) -> list[wire.AskCard]:
        return list(self.asks.values())

    def waiting(self) -> dict[str, Any] | None:
        """Home's `waiting`: the oldest ask's kind and id, and how many wait behind it."""
        if not self.asks:
            return None
        first = next(iter(self.asks.values()))
        kind = "permission" if isinstance(first, wire.PermissionCard) else "question"
        return {"kind": kind, "id": first.id, "behind": len(self.asks) - 1}

    def home_lifecycle(self) -> str:
        if self.lifecycle in ("idle", "working") and self.asks:
            return "waiting"
        return self.lifecycle

    # --- internals -------------------------------------------------------------------------

    def _catalogues(self, event: worker.SessionStarted) -> list[Update]:
        """What the CLI advertises, pushed when its init moves it."""
        updates: list[Update] = []
        if event.slash_commands != self.slash_commands:
            self.slash_commands = list(event.slash_commands)
            body = {"key": self.key, "slash_commands": self.slash_commands}
            updates.append(("slash_commands_changed", body))
        if event.agents != self.subagents:
            self.subagents = list(event.agents)
            updates.append(("subagents_changed", {"key": self.key, "subagents": self.subagents}))
        return updates

    def _calls_requested(self, blocks: list[worker.Block]) -> list[Update]:
        updates: list[Update] = []
        for block in blocks:
            if isinstance(block, worker.ToolUseBlock) and block.id not in self.calls:
                self.calls[block.id] = _Call(block.name)
                updates.extend(self._call_moved(block.id, "requested"))
        return updates

    def _call_result(self, event: worker.ToolResult) -> list[Update]:
        call = self.calls.get(event.tool_use_id)
        if call is None:
            return []
        if event.background_task_id is not None and not event.is_error:
            call.task_id, call.running = event.background_task_id, not call.task_ended
            call.session_id, call.output_file = self.session_id, event.background_output
            background = [c for c, kept in self.calls.items() if kept.task_id is not None]
            for forgotten in background[:-KEPT_TASKS]:
                del self.calls[forgotten]
            return self._call_moved(event.tool_use_id, "backgrounded")
        ended = self._call_moved(event.tool_use_id, "ended", "error" if event.is_error else "ok")
        del self.calls[event.tool_use_id]  # only a background call is read again
        return ended

    def _task_moved(self, event: worker.TaskStarted | worker.TaskEnded) -> list[Update]:
        found = next(
            (
                (call_id, call)
                for call_id, call in self.calls.items()
                if call_id == event.tool_use_id or call.task_id == event.task_id
            ),
            None,
        )
        if found is None:
            return []
        call_id, call = found
        if isinstance(event, worker.TaskStarted):
            call.task_id = event.task_id
            return []
        if call.task_ended:
            return []
        call.running, call.task_ended = False, True
        call.task_id = call.task_id or event.task_id
        call.output_file = event.output_file or call.output_file
        return self._call_moved(call_id, "ended", _TASK_OUTCOMES.get(event.status, "stopped"))

    def _call_moved(
        self, call_id: str, phase: wire.CallPhase, outcome: str | None = None
    ) -> list[Update]:
        call = self.calls.get(call_id)
        if call is None:
            return []
        body = {
            "key": self.key,
            "id": call_id,
            "name": call.name,
            "phase": phase,
            "task_id": call.task_id,
            "outcome": outcome,
        }
        return [("command_lifecycle", body)]

    def _chat(self, message: wire.ChatMessage) -> Update:
        return ("chat_appended", {"key": self.key, "msg": message})

    def _prompt_moved(self, event: worker.PromptLifecycle) -> list[Update]:
        prompt = self._bound.get(event.prompt_id)
        if prompt is None:
            prompt = (
                self._unbound.popleft()
                if self._unbound
                else _Prompt(str(uuid.uuid4()), "agent", event.text)
            )
            self._bound[event.prompt_id] = prompt
        if event.phase == "queued":
            row = wire.QueuedPrompt(uuid=prompt.uuid, source=prompt.source, text=prompt.text)
            self.queue.append(row)
            return [("prompt_queued", {"key": self.key, "prompt": row})]
        if event.phase == "started":
            self.queue = [row for row in self.queue if row.uuid != prompt.uuid]
            self.turn_in_flight = True
            self.lifecycle = "working"
            return [
                self._lifecycle_update(prompt.uuid, "started", None),
                self._chat(wire.UserMessage(uuid=prompt.uuid, text=prompt.text)),
                self.header_update(),
            ]
        del self._bound[event.prompt_id]
        self.queue = [row for row in self.queue if row.uuid != prompt.uuid]
        self.turn_in_flight = False
        self.lifecycle = "idle"
        if event.outcome == "completed":
            self.problem = None
        return [self._lifecycle_update(prompt.uuid, "ended", event.outcome), self.header_update()]

    def _lifecycle_update(self, prompt_uuid: str, phase: str, outcome: str | None) -> Update:
        return (
            "prompt_lifecycle",
            {"key": self.key, "uuid": prompt_uuid, "phase": phase, "outcome": outcome},
        )

    def _ask_raised(self, card: wire.AskCard) -> list[Update]:
        self.asks[card.id] = card
        return [("ask_pending", {"key": self.key, "ask": card})]

    def _ask_resolved(self, ask_id: str, outcome: str) -> Update:
        self.asks.pop(ask_id, None)
        return ("ask_resolved", {"key": self.key, "id": ask_id, "outcome": outcome})


def _block(block: worker.Block) -> wire.Block:
    match block:
        case worker.TextBlock():
            return wire.TextBlock(block.text)
        case worker.ThinkingBlock():
            return wire.ThinkingBlock(block.thinking)
        case worker.ToolUseBlock():
            return wire.ToolUseBlock(block.id, block.name, block.input)
    raise AssertionError(block)


def decision_of(answer: Any, card: wire.AskCard) -> worker.Decision:
    """The worker's decision for a client's `answer` on `card`; raises ValueError with the
    sentence a client is refused with."""
    if answer == "allow_once":
        decision: worker.Decision = worker.AllowOnce()
    elif answer == "allow_always":
        decision = worker.AllowAlways()
    elif isinstance(answer, dict) and len(answer) == 1:
        ((name, body),) = answer.items()
        try:
            if name == "deny":
                deny = msgspec.convert(body, wire.Deny)
                decision = worker.Deny(reason=deny.reason)
            elif name == "choose":
                decision = worker.Choose(answers=msgspec.convert(body, wire.Choose).answers)
            else:
                raise ValueError(
                    f"answer {name!r} is none of allow_once, allow_always, deny, choose"
                )
        except msgspec.ValidationError as error:
            raise ValueError(f"answer {name}: {error}") from None
    else:
        raise ValueError(
            'answer is "allow_once", "allow_always", {"deny": {...}} or {"choose": {...}}'
        )
    is_question = isinstance(card, wire.QuestionCard)
    if is_question != isinstance(decision, worker.Choose):
        kind, wanted = (
            ("a question", "choose") if is_question else ("a permission ask", "allow or deny")
        )
        raise ValueError(f"ask {card.id} is {kind}: answer it with {wanted}")
    return decision
