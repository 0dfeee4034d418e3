"""One Claude Code session: a `ClaudeSDKClient` in the seat's directory, read in order.

A reader task turns every message the CLI sends into protocol events (`events.events_of`); the
CLI's permission callback (`can_use_tool`) raises an ask and waits for its `Answer`; prompts go
to the CLI one at a time (`turns.TurnQueue`), the next when the running turn's result arrives.
Imported only once `locate.require_sdk` has found the SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    ToolPermissionContext,
)
from claude_agent_sdk import PermissionUpdate as SdkPermissionUpdate
from claude_agent_sdk.types import PermissionRuleValue

from forge.ipc.errors import RequestFailed
from forge.ipc.protocol import WorkerEvent
from forge.procs import descendants, is_live, kill_processes
from forge.wire.agent import ContextCategory, ContextUsage
from forge.workers.agent.events import credentials_refused, events_of
from forge.workers.agent.mcp import ALLOWED, VoiceTool
from forge.workers.agent.protocol import (
    AllowAlways,
    AllowOnce,
    AskEnded,
    Choose,
    Decision,
    Deny,
    Effort,
    PermissionAsk,
    PermissionMode,
    PermissionRule,
    PermissionUpdate,
    Problem,
    PromptAccepted,
    PromptLifecycle,
    PromptOutcome,
    Question,
    QuestionAsk,
    Result,
    SessionStarted,
    TaskEnded,
    TaskStarted,
)
from forge.workers.agent.turns import QueuedPrompt, TurnQueue
from forge.workers.agent.voice import SERVER_NAME, Room

Emit = Callable[[WorkerEvent], Awaitable[None]]
PermissionResult = PermissionResultAllow | PermissionResultDeny

QUESTION_TOOL = "AskUserQuestion"
LINE_MAX_BYTES = 16 * 1024 * 1024
"""The longest stream-json line read from the CLI. The SDK's default, 1 MiB, ends the session on
one larger message: a tool call whose input is a megabyte (a `voice__say` line, a `Write`) would
crash the seat."""


@dataclass
class _Ask:
    """An ask the CLI waits on: what it asked and the future its callback awaits."""

    tool_name: str
    input: dict[str, Any]
    suggestions: list[SdkPermissionUpdate]
    answer: asyncio.Future[PermissionResult]
    questions: list[Question] = field(default_factory=list)


class AgentSession:
    """The CLI of one seat; every method is called from the worker's event loop."""

    def __init__(
        self,
        *,
        cwd: Path,
        cli_path: Path,
        model: str | None,
        permission_mode: PermissionMode,
        effort: Effort | None,
        emit: Emit,
        lost: Callable[[], None],
    ) -> None:
        self.cwd, self.cli_path = cwd, cli_path
        self._model, self._mode = model, permission_mode
        self.effort = effort
        """What the CLI is started with (`--effort`)."""
        self._session_id: str | None = None
        """The session the CLI runs, once it is on record (resumable): resumed, or a turn ended."""
        self._tasks: set[str] = set()
        """Background tasks running beside the turns (they end with the CLI)."""
        self._emit = emit
        self._lost = lost
        """Called when the CLI ends without being asked (the worker then exits, to be restarted
        and resumed by the supervisor)."""
        self._client: ClaudeSDKClient | None = None
        self._reader: asyncio.Task[None] | None = None
        self._turns = TurnQueue()
        self._asks: dict[str, _Ask] = {}
        self._interrupting = False
        self._failed_turn = False
        self._closing = False
        self._background: set[asyncio.Task[None]] = set()
        self._voice = VoiceTool(emit)

    @property
    def started(self) -> bool:
        return self._client is not None

    async def start(self, session_id: str | None) -> None:
        """Start the CLI (resuming `session_id` when given) and read it until it ends."""
        options = ClaudeAgentOptions(
            cwd=str(self.cwd),
            cli_path=str(self.cli_path),
            model=self._model,
            permission_mode=self._mode,
            effort=self.effort,
            resume=session_id,
            can_use_tool=self._can_use_tool,
            include_partial_messages=True,
            mcp_servers={SERVER_NAME: self._voice.server()},
            allowed_tools=ALLOWED,
            max_buffer_size=LINE_MAX_BYTES,
        )
        client = ClaudeSDKClient(options)
        self._closing = False
        self._session_id = session_id
        await client.connect()
        self._client = client
        self._reader = asyncio.ensure_future(self._read(client))

    async def prompt(self, text: str) -> PromptAccepted:
        client = self._require()
        prompt, ahead = self._turns.submit(text)
        if ahead:
            await self._emit(PromptLifecycle(prompt_id=prompt.prompt_id, phase="queued", text=text))
        else:
            await self._begin(client, prompt)
        return PromptAccepted(prompt_id=prompt.prompt_id, queued=ahead)

    async def interrupt(self) -> bool:
        client = self._require()
        if self._turns.running is None:
            return False
        self._interrupting = True
        self._withdraw_asks("interrupted by the person")
        await client.interrupt()
        return True

    async def answer(self, ask_id: str, decision: Decision) -> None:
        ask = self._asks.get(ask_id)
        if ask is None or ask.answer.done():
            raise RequestFailed(
                "unknown_ask", f"no ask {ask_id!r} waits (answered, withdrawn, or never raised)"
            )
        ask.answer.set_result(_result_for(ask, decision))
        del self._asks[ask_id]
        await self._emit(AskEnded(ask_id=ask_id, outcome="answered"))

    async def set_permission_mode(self, mode: PermissionMode) -> None:
        client = self._require()
        with _cli_refusal():
            await client.set_permission_mode(mode)
        self._mode = mode

    async def set_model(self, model: str | None) -> None:
        client = self._require()
        with _cli_refusal():
            await client.set_model(model)
        self._model = model

    def set_listeners(self, listeners: int, speech: bool) -> None:
        """Who hears the seat: what `voice__say` answers the model from now on."""
        self._voice.room = Room(listeners=listeners, speech=speech)

    async def set_effort(self, effort: Effort) -> None:
        """The CLI takes its effort only as it starts (`--effort`; the SDK has no live
        setter), so an idle CLI is restarted on the same session, resumed by id."""
        self._require()
        if self._turns.running is not None:
            raise RequestFailed(
                "turn_running",
                "the effort applies when Claude Code starts, between turns: "
                "send it again once the turn in flight ends",
            )
        if self._tasks:
            raise RequestFailed(
                "tasks_running",
                f"background task {sorted(self._tasks)[0]} would end with the restart that "
                "applies the effort: send it again once the task ends",
            )
        resume = self._session_id
        await self.close()
        self.effort = effort
        try:
            await self.start(resume)
        except Exception as error:
            # The worker ends so the manager restarts it and the supervisor resumes the seat.
            self._lost()
            raise RequestFailed("cli_failed", f"Claude Code did not restart: {error}") from None

    async def context_usage(self) -> ContextUsage:
        client = self._require()
        with _cli_refusal():
            usage = await client.get_context_usage()
        return ContextUsage(
            total_tokens=int(usage.get("totalTokens", 0)),
            max_tokens=int(usage.get("maxTokens", 0)),
            percentage=float(usage.get("percentage", 0.0)),
            model=str(usage.get("model", "")),
            categories=[
                ContextCategory(name=str(category["name"]), tokens=int(category["tokens"]))
                for category in usage.get("categories", [])
            ],
        )

    async def close(self) -> list[int]:
        """End the session: withdraw asks, drop prompts, close the CLI, then kill whatever it
        started that outlived it; the pids killed."""
        self._closing = True
        self._withdraw_asks("the session stopped")
        busy = self._turns.running is not None
        for dropped in self._turns.clear():
            await self._emit(
                PromptLifecycle(
                    prompt_id=dropped.prompt_id, phase="ended", text=dropped.text, outcome="dropped"
                )
            )
        client, self._client = self._client, None
        self._tasks.clear()
        started = descendants(os.getpid())
        if client is not None:
            if busy:
                # A CLI mid-turn ignores the end of its input for seconds; an idle one leaves.
                with contextlib.suppress(Exception):
                    await client.interrupt()
            await client.disconnect()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None
        outlived = [pid for pid in started if is_live(pid)]
        return await kill_processes(outlived) if outlived else []

    # --- inside ---------------------------------------------------------------------------

    def _require(self) -> ClaudeSDKClient:
        if self._client is None:
            raise RequestFailed("not_started", "the agent's session has not started (send start)")
        return self._client

    async def _begin(self, client: ClaudeSDKClient, prompt: QueuedPrompt) -> None:
        self._interrupting = self._failed_turn = False
        await self._emit(
            PromptLifecycle(prompt_id=prompt.prompt_id, phase="started", text=prompt.text)
        )
        await client.query(prompt.text)

    async def _read(self, client: ClaudeSDKClient) -> None:
        try:
            async for message in client.receive_messages():
                for event in events_of(message):
                    self._note(event)
                    await self._emit(event)
                    if credentials_refused(event) and self._turns.running is not None:
                        # The CLI retries a refused key for minutes; the person acts instead.
                        self._failed_turn = True
                        await client.interrupt()
                if isinstance(message, ResultMessage):
                    await self._turn_ended(client, message)
        except Exception as error:
            if not self._closing:
                await self._emit(
                    Problem(code="cli_exited", message=f"the Claude Code CLI failed: {error}")
                )
                self._lost()
            return
        if not self._closing:
            await self._emit(
                Problem(code="cli_exited", message="the Claude Code CLI exited unasked")
            )
            self._lost()

    def _note(self, event: WorkerEvent) -> None:
        """What the session keeps of its own stream: the session on record, the tasks running."""
        if isinstance(event, Result) or (
            isinstance(event, SessionStarted) and self._session_id is not None
        ):
            self._session_id = event.session_id
        elif isinstance(event, TaskStarted):
            self._tasks.add(event.task_id)
        elif isinstance(event, TaskEnded):
            self._tasks.discard(event.task_id)

    async def _turn_ended(self, client: ClaudeSDKClient, result: ResultMessage) -> None:
        ended, following = self._turns.finish()
        if ended is not None:
            await self._emit(
                PromptLifecycle(
                    prompt_id=ended.prompt_id,
                    phase="ended",
                    text=ended.text,
                    outcome=self._outcome(result),
                )
            )
        if following is not None:
            await self._begin(client, following)

    def _outcome(self, result: ResultMessage) -> PromptOutcome:
        if self._failed_turn:
            return "failed"
        if self._interrupting or (result.terminal_reason or "").startswith("aborted"):
            return "interrupted"
        return "failed" if result.is_error else "completed"

    def _withdraw_asks(self, why: str) -> None:
        for ask_id, ask in list(self._asks.items()):
            if not ask.answer.done():
                ask.answer.set_result(PermissionResultDeny(message=why, interrupt=True))
            del self._asks[ask_id]
            self._later(self._emit(AskEnded(ask_id=ask_id, outcome="withdrawn")))

    def _later(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _can_use_tool(
        self, tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        """The CLI's permission callback: raise the ask, hold the call until it is decided."""
        ask_id = context.tool_use_id or f"ask-{id(tool_input)}"
        ask = _Ask(
            tool_name=tool_name,
            input=tool_input,
            suggestions=list(context.suggestions),
            answer=asyncio.get_running_loop().create_future(),
        )
        if tool_name == QUESTION_TOOL:
            ask.questions = msgspec.convert(
                tool_input.get("questions", []), list[Question], strict=False
            )
            event: WorkerEvent = QuestionAsk(ask_id=ask_id, questions=ask.questions)
        else:
            event = PermissionAsk(
                ask_id=ask_id,
                tool_name=tool_name,
                input=tool_input,
                title=context.title,
                description=context.description,
                decision_reason=context.decision_reason,
                blocked_path=context.blocked_path,
                suggestions=[_ours(update) for update in context.suggestions],
            )
        self._asks[ask_id] = ask
        try:
            await self._emit(event)
            return await ask.answer
        except asyncio.CancelledError:
            # The CLI withdrew the request (its turn was interrupted).
            if self._asks.pop(ask_id, None) is not None:
                self._later(self._emit(AskEnded(ask_id=ask_id, outcome="withdrawn")))
            raise


@contextlib.contextmanager
def _cli_refusal() -> Iterator[None]:
    """A control request the CLI refused, as `cli_refused` with the CLI's own sentence."""
    try:
        yield
    except RequestFailed:
        raise
    except Exception as error:
        raise RequestFailed("cli_refused", f"Claude Code refused: {error}") from None


def _result_for(ask: _Ask, decision: Decision) -> PermissionResult:
    """The permission callback's answer for `decision`, or `wrong_answer` naming the misfit."""
    if isinstance(decision, Deny):
        return PermissionResultDeny(message=decision.reason, interrupt=decision.interrupt)
    if ask.tool_name == QUESTION_TOOL:
        if not isinstance(decision, Choose):
            raise RequestFailed("wrong_answer", "a question is answered with choose (or deny)")
        return PermissionResultAllow(
            updated_input={**ask.input, "answers": _answers(ask.questions, decision)}
        )
    if isinstance(decision, Choose):
        raise RequestFailed(
            "wrong_answer", f"a permission ask for {ask.tool_name} takes allow or deny, not choose"
        )
    if isinstance(decision, AllowOnce):
        return PermissionResultAllow()
    assert isinstance(decision, AllowAlways)
    updates = (
        ask.suggestions
        if decision.updates is None
        else [_theirs(update) for update in decision.updates]
    )
    return PermissionResultAllow(updated_permissions=updates)


def _answers(questions: list[Question], decision: Choose) -> dict[str, str]:
    """AskUserQuestion's `answers`: each question's text to its chosen labels, comma-joined."""
    answers: dict[str, str] = {}
    for question in questions:
        chosen = decision.answers.get(question.question)
        if not chosen:
            raise RequestFailed("wrong_answer", f"no answer for {question.question!r}")
        if len(chosen) > 1 and not question.multi_select:
            raise RequestFailed(
                "wrong_answer", f"{question.question!r} takes one answer, not {len(chosen)}"
            )
        answers[question.question] = ", ".join(chosen)
    unknown = set(decision.answers) - {question.question for question in questions}
    if unknown:
        raise RequestFailed("wrong_answer", f"no question {sorted(unknown)[0]!r} was asked")
    return answers


def _ours(update: SdkPermissionUpdate) -> PermissionUpdate:
    rules = update.rules or []
    return PermissionUpdate(
        type=update.type,
        rules=None
        if update.rules is None
        else [PermissionRule(tool_name=r.tool_name, rule_content=r.rule_content) for r in rules],
        behavior=update.behavior,
        mode=update.mode,
        directories=update.directories,
        destination=update.destination or "session",
    )


def _theirs(update: PermissionUpdate) -> SdkPermissionUpdate:
    return SdkPermissionUpdate(
        type=update.type,
        rules=None
        if update.rules is None
        else [PermissionRuleValue(r.tool_name, r.rule_content) for r in update.rules],
        behavior=update.behavior,
        mode=update.mode,
        directories=update.directories,
        destination=update.destination,
    )
