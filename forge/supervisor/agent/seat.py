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
class AgentSeat:
    key: Seat
    cwd: str
    model: str | None = None
    permission_mode: str | None = None
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
                return [self.header_update()]
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
                return [
                    self._chat(wire.AssistantMessage(message_id=event.message_id, blocks=blocks))
                ]
            case worker.ToolResult():
                message = wire.ToolResultMessage(
                    tool_use_id=event.tool_use_id, is_error=event.is_error, text=event.text
                )
                return [self._chat(message)]
            case worker.PermissionAsk():
                card: wire.AskCard = wire.PermissionCard(
                    id=event.ask_id,
                    tool_name=event.tool_name,
                    input=event.input,
                    title=event.title,
                    decision_reason=event.decision_reason,
                )
                return self._ask_raised(card)
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
                return self._ask_raised(wire.QuestionCard(id=event.ask_id, questions=questions))
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
            permission_mode=self.permission_mode,
            turn_in_flight=self.turn_in_flight,
            agent_session_id=self.session_id,
        )

    def header_update(self) -> Update:
        return ("agent_header", {"key": self.key, "header": self.header()})

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
