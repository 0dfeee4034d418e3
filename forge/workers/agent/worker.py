"""The agent worker: the SDK and a CLI are checked before hello, then one session per `start`.

The session (`session.AgentSession`, which imports the SDK) is loaded only after `setup` found
the SDK, so a supervisor without `forge[agent]` gets a `failed` row whose reason names the
install command rather than a crash loop. A CLI that ends unasked ends the worker too: the
manager restarts it and the supervisor resumes the session by id.
"""

from __future__ import annotations

import msgspec

from forge.ipc.errors import RequestFailed, WorkerConfigError
from forge.ipc.worker import Worker, handles
from forge.wire.agent import ContextUsage
from forge.workers.agent.locate import find_cli, require_sdk, seat_folder
from forge.workers.agent.protocol import (
    AGENT,
    Answer,
    Answered,
    GetContextUsage,
    Interrupt,
    Interrupted,
    Listeners,
    Problem,
    Prompt,
    PromptAccepted,
    SeatConfig,
    SetEffort,
    SetModel,
    SetPermissionMode,
    Start,
    Started,
    Stop,
    Stopped,
)

NOT_RECORDED = "No conversation found with session ID"
"""What the CLI says when asked to resume a session it never wrote down."""


class AgentHost(Worker):
    kind = AGENT.kind

    async def setup(self) -> None:
        try:
            config = msgspec.convert(dict(self.config), SeatConfig)
        except msgspec.ValidationError as error:
            raise WorkerConfigError(f"agent seat config: {error}") from None
        cwd = seat_folder(config.cwd)
        cli_path = find_cli(config.cli_path, require_sdk())
        from forge.workers.agent.session import AgentSession

        self.session = AgentSession(
            cwd=cwd,
            cli_path=cli_path,
            model=config.model,
            permission_mode=config.permission_mode,
            effort=config.effort,
            emit=self.emit,
            lost=self.request_stop,
        )

    @handles(Start)
    async def start(self, request: Start) -> Started:
        if self.session.started:
            raise RequestFailed("already_started", "the agent's session is running (stop it first)")
        resumed = request.session_id
        if request.effort is not None:
            self.session.effort = request.effort
        try:
            try:
                await self.session.start(resumed)
            except Exception as error:
                if resumed is None or NOT_RECORDED not in str(error):
                    raise
                # The CLI died before it wrote the session's first turn: there is nothing to
                # resume, so the seat goes on in a fresh session and says so.
                self.log.warning("agent_session_not_recorded", session_id=resumed)
                await self.session.start(None)
                await self.emit(
                    Problem(
                        code="session_not_recorded",
                        message=f"session {resumed} ended before Claude Code recorded it; "
                        "a new session started",
                    )
                )
                resumed = None
        except Exception as error:
            self.log.warning("agent_cli_start_failed", reason=str(error))
            raise RequestFailed("cli_failed", f"Claude Code did not start: {error}") from None
        return Started(cli_path=str(self.session.cli_path), resumed=resumed)

    @handles(Prompt)
    async def prompt(self, request: Prompt) -> PromptAccepted:
        return await self.session.prompt(request.text)

    @handles(Interrupt)
    async def interrupt(self, request: Interrupt) -> Interrupted:
        return Interrupted(interrupted=await self.session.interrupt())

    @handles(Answer)
    async def answer(self, request: Answer) -> Answered:
        await self.session.answer(request.ask_id, request.decision)
        return Answered(ask_id=request.ask_id)

    @handles(SetPermissionMode)
    async def set_permission_mode(self, request: SetPermissionMode) -> None:
        await self.session.set_permission_mode(request.mode)

    @handles(SetModel)
    async def set_model(self, request: SetModel) -> None:
        await self.session.set_model(request.model)

    @handles(SetEffort)
    async def set_effort(self, request: SetEffort) -> None:
        await self.session.set_effort(request.effort)

    @handles(GetContextUsage)
    async def get_context_usage(self, request: GetContextUsage) -> ContextUsage:
        return await self.session.context_usage()

    @handles(Listeners)
    async def listeners(self, request: Listeners) -> None:
        self.session.set_listeners(request.listeners, request.speech)

    @handles(Stop)
    async def stop(self, request: Stop) -> Stopped:
        return Stopped(killed=await self.session.close())

    async def teardown(self) -> None:
        await self.session.close()
