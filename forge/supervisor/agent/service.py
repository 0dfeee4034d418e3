"""Agent seats on the socket: one agent worker (Claude Code) per seat, its commands and its stream.

`AgentService.install` registers the agent commands (`spawn`, `despawn`, `prompt`, `cancel`,
`answer`, `set_model`, `set_permission_mode`, `set_effort`, `read_call_output`), the `more`
verb, the `usage` subject, and the agent layer of the session subject (header, conversation,
pending asks, catalogues, queue). Each worker event becomes seat updates
(`seat.AgentSeat.apply`) numbered on the seat's counter, so every connection holding the seat
reads the same frames under the same seq; token appends cross folded (`fold`). The conversation
is read from the CLI's own transcript (`conversation`), and the seats with an agent are recorded
(`records`): a restarted supervisor brings each back, resuming its session by id. Only a
connection that subscribed `answering` may answer an ask, and home's row says whether one holds
the seat.

A worker that ends unasked is restarted by the manager; its seat shows `crashed` (home's row
and the session's `agent_problem`), its in-flight prompt ends `failed` and its asks are
withdrawn, and once the new generation is ready the session is resumed by id.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from forge import git
from forge.clock import epoch_ms
from forge.ipc.errors import RequestFailed, WorkerError
from forge.ipc.manager import WorkerEvent as RawEvent
from forge.ipc.manager import WorkerHandle, WorkerManager, WorkerRow
from forge.ipc.protocol import WorkerRequest, call
from forge.logs import get_logger
from forge.supervisor.agent import call_output, conversation, fold, usage
from forge.supervisor.agent import voice as agent_voice
from forge.supervisor.agent.records import AgentRecord, AgentRecords, UsageLedger
from forge.supervisor.agent.seat import AgentSeat, Update, decision_of
from forge.supervisor.service import WorkerService
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.socket.seats import SeatState, UnknownProject
from forge.wire import agent as wire
from forge.wire import server
from forge.wire.client import More
from forge.wire.commands import CommandCall
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat, Subject, session
from forge.workers.agent import protocol as worker

ReplyT = TypeVar("ReplyT")

log = get_logger(__name__)

START_WITHIN_S = 180.0
"""How long the CLI may take to start (a large Node program; slow on a loaded machine)."""
REQUEST_WITHIN_S = 60.0


class AgentService(WorkerService):
    """Every agent seat of this supervisor and its worker."""

    name = "agent"

    def __init__(
        self,
        supervisor: Supervisor,
        manager: WorkerManager,
        records: AgentRecords | None = None,
        speech: agent_voice.Speech | None = None,
        ledger: UsageLedger | None = None,
    ) -> None:
        super().__init__(supervisor, manager)
        self._records = records or AgentRecords()
        self._speech = speech
        self._ledger = ledger or UsageLedger()
        self._spends: list[usage.Spend] = []
        self._deltas: dict[Seat, list[Update]] = {}
        """Token appends held until the worker's queued events are read, then folded."""
        self._answerable: dict[Seat, bool] = {}
        self._seats: dict[Seat, AgentSeat] = {}
        self._handles: dict[Seat, WorkerHandle] = {}
        self._by_worker: dict[str, Seat] = {}
        self._restarting: set[Seat] = set()

    def install(self) -> None:
        supervisor = self.supervisor
        supervisor.register_command("spawn", self._spawn)
        supervisor.register_command("despawn", self._despawn)
        supervisor.register_command("prompt", self._prompt)
        supervisor.register_command("cancel", self._cancel)
        supervisor.register_command("answer", self._answer)
        supervisor.register_command("set_model", self._set_model)
        supervisor.register_command("set_permission_mode", self._set_mode)
        supervisor.register_command("set_effort", self._set_effort)
        supervisor.register_command("read_call_output", self._read_call_output)
        supervisor.register_verb(More, self._more)
        supervisor.register_session_layer(self._session_layer)
        supervisor.register_subject("usage", self._usage)
        supervisor.on_holders(self._holders_moved)
        self._spends = self._ledger.load()
        super().install()
        for record in self._records.load():
            self.tasks.spawn(self._restore(record))

    # --- commands --------------------------------------------------------------------------

    async def _spawn(self, connection: Connection, command: CommandCall) -> None:
        bag = _bag(command, wire.Spawn)
        key = bag.key
        if key in self._seats:
            raise ClientRefusal(
                "command", f"seat {key} already has an agent (despawn it first)", key
            )
        project = self.supervisor.loaded.config.project(key.org, key.project)
        if project is None:
            raise ClientRefusal("command", f"no project {key.org}/{key.project} is configured", key)
        cwd = project.path if bag.worktree is None else await _worktree(project.path, bag.worktree)
        record = AgentRecord(
            key=key,
            cwd=str(cwd),
            model=bag.model,
            permission_mode=bag.permission_mode,
            session_id=None,
            effort=bag.effort,
        )
        seat = await self._launch(record)
        assert command.reply_to is not None
        reply = wire.SpawnReply(key=key, session_id=seat.session_id, cwd=seat.cwd)
        connection.send(server.Reply(reply_to=command.reply_to, body=reply))
        if self._speech is not None and self.supervisor.loaded.config.tts.enabled:
            note = self._speech.listening_note(key)
            if note is not None:
                self.tasks.spawn(self._note(key, note))

    async def _despawn(self, connection: Connection, command: CommandCall) -> None:
        key = _bag(command, wire.Despawn).key
        seat, handle = self._require(key)
        killed: list[int] = []
        try:
            killed = (await call(handle, worker.Stop(), within=REQUEST_WITHIN_S)).killed
        except WorkerError as error:
            log.warning("agent_stop_failed", seat=str(key), reason=str(error))
        await self._drop(key)
        seat.set_lifecycle("stopped")
        await self._publish_row(seat)
        assert command.reply_to is not None
        reply = wire.DespawnReply(key=key, killed=killed)
        connection.send(server.Reply(reply_to=command.reply_to, body=reply))

    async def _prompt(self, connection: Connection, command: CommandCall) -> None:
        bag = _bag(command, wire.PromptCommand)
        await self._submit(bag.key, bag.text, bag.source)

    async def _submit(self, key: Seat, text: str, source: str) -> str:
        """Send the seat's agent a prompt (it runs or waits in the queue); its uuid."""
        seat, handle = self._require(key)
        prompt_uuid = seat.submit(text, source)
        try:
            await self._command(handle, key, worker.Prompt(text=text))
        except ClientRefusal:
            seat.refused(prompt_uuid)
            raise
        return prompt_uuid

    async def _cancel(self, connection: Connection, command: CommandCall) -> None:
        key = _bag(command, wire.Cancel).key
        _, handle = self._require(key)
        interrupted = await self._command(handle, key, worker.Interrupt())
        if not interrupted.interrupted:
            raise ClientRefusal("command", f"no turn is running on seat {key}", key)

    async def _answer(self, connection: Connection, command: CommandCall) -> None:
        bag = _bag(command, wire.AnswerCommand)
        seat, handle = self._require(bag.key)
        if not connection.answering:
            raise ClientRefusal(
                "command",
                "this connection did not subscribe with answering: true, so it may not answer "
                f"ask {bag.id}",
                bag.key,
            )
        card = seat.asks.get(bag.id)
        if card is None:
            raise ClientRefusal(
                "command",
                f"no ask {bag.id} waits on seat {bag.key} (answered, withdrawn, or never raised)",
                bag.key,
            )
        try:
            decision = decision_of(bag.answer, card)
        except ValueError as error:
            raise ClientRefusal("command", str(error), bag.key) from None
        await self._command(handle, bag.key, worker.Answer(ask_id=bag.id, decision=decision))

    async def _set_model(self, connection: Connection, command: CommandCall) -> None:
        bag = _bag(command, wire.SetModelCommand)
        seat, handle = self._require(bag.key)
        await self._command(handle, bag.key, worker.SetModel(model=bag.model))
        seat.model = bag.model
        self._publish(bag.key, [seat.header_update()])

    async def _set_mode(self, connection: Connection, command: CommandCall) -> None:
        bag = _bag(command, wire.SetPermissionModeCommand)
        seat, handle = self._require(bag.key)
        await self._command(handle, bag.key, worker.SetPermissionMode(mode=bag.mode))
        seat.permission_mode = bag.mode
        self._publish(bag.key, [seat.header_update()])

    # --- voice: the voice area reaches these as its agent door --------------------------------

    def has_agent(self, key: Seat) -> bool:
        return key in self._seats

    async def dictated(self, key: Seat, text: str) -> str:
        """A dictation take's words sent as the seat's next prompt; its uuid (refused as a
        `command` refusal when the seat has no agent or the worker refuses)."""
        return await self._submit(key, text, "dictation")

    def voice_changed(self, key: Seat, note: str | None) -> None:
        """The seat's listeners changed (`state.voice_listeners` holds the count): tell its
        worker, and send the agent `note` when the first listener came or the last one left
        (only while `[tts]` is on: the note asks the agent to speak)."""
        handle = self._handles.get(key)
        if handle is not None and key in self._seats:
            self.tasks.spawn(self._voice_changed(key, handle, note))

    async def _voice_changed(self, key: Seat, handle: WorkerHandle, note: str | None) -> None:
        if await self._tell_listeners(key, handle) and note is not None:
            await self._note(key, note)

    async def _note(self, key: Seat, note: str) -> None:
        """Send the agent a `[Voice]` note, as a prompt of source `voice`."""
        try:
            await self._submit(key, note, "voice")
        except ClientRefusal as refusal:
            log.warning("agent_voice_note_unsent", seat=str(key), reason=refusal.why)

    async def _tell_listeners(self, key: Seat, handle: WorkerHandle) -> bool:
        """Tell the seat's worker who listens; whether the seat can speak at all (`[tts]`)."""
        request = agent_voice.listeners(self.supervisor, key, self._speech)
        await self.tell(handle, request, "agent_listeners_unsent", seat=str(key))
        return request.speech

    async def _set_effort(self, connection: Connection, command: CommandCall) -> None:
        bag = _bag(command, wire.SetEffortCommand)
        seat, handle = self._require(bag.key)
        await self._command(handle, bag.key, worker.SetEffort(effort=bag.effort))
        seat.effort = bag.effort
        self._save()
        self._publish(bag.key, [seat.header_update()])

    async def _read_call_output(self, connection: Connection, command: CommandCall) -> None:
        bag = _bag(command, wire.ReadCallOutput)
        seat, _ = self._require(bag.key)
        answer = await asyncio.to_thread(call_output.answer, seat, bag, os.environ)
        connection.send(server.Update.out_of_band("call_output", answer))

    # --- the session subject and `more` ------------------------------------------------------

    async def _session_layer(self, state: SeatState) -> dict[str, Any]:
        seat = self._seats.get(state.seat)
        if seat is None:
            return {}
        turns, cursor = await self._page(seat, None, conversation.PAGE_TURNS)
        if seat.context_usage is None and seat.session_id is not None:
            await self._measure_context(seat)
        asks = seat.pending_asks()
        return {
            "header": msgspec.to_builtins(seat.header()),
            "conversation": {"turns": turns, "cursor": cursor, "compactions": 0},
            "pending_asks": asks,
            "pending_ask": asks[0] if asks else None,
            "slash_commands": list(seat.slash_commands),
            "subagents": list(seat.subagents),
            "state": {"queue": list(seat.queue)},
        }

    async def _usage(self) -> dict[str, Any]:
        return usage.snapshot(self._spends, epoch_ms(self.supervisor.clock))

    async def _more(self, connection: Connection, message: More) -> None:
        key = message.conversation
        self.supervisor.require_seat("more", key)
        seat = self._seats.get(key)
        before = message.before
        if before is not None and (
            not isinstance(before, int) or isinstance(before, bool) or before < 0
        ):
            raise ClientRefusal("more", "before is a cursor a page or snapshot gave, or null", key)
        wanted = message.turns if message.turns is not None else conversation.PAGE_TURNS
        if not 0 < wanted <= conversation.MAX_PAGE_TURNS:
            raise ClientRefusal("more", f"turns is from 1 to {conversation.MAX_PAGE_TURNS}", key)
        turns, cursor = ([], None) if seat is None else await self._page(seat, before, wanted)
        connection.send(server.Page(conversation=key, turns=turns, cursor=cursor))

    async def _page(
        self, seat: AgentSeat, before: int | None, turns: int
    ) -> tuple[list[wire.Turn], int | None]:
        if seat.session_id is None:
            return [], None
        session_id = seat.session_id

        def read() -> tuple[list[wire.Turn], int | None]:
            path = conversation.find_transcript(conversation.config_dir(os.environ), session_id)
            return conversation.page(
                conversation.messages_of(conversation.read_rows(path)), before, turns
            )

        return await asyncio.to_thread(read)

    # --- workers -----------------------------------------------------------------------------

    async def _launch(self, record: AgentRecord) -> AgentSeat:
        """Start the seat's worker and its CLI (resuming `record.session_id` when set)."""
        key = record.key
        try:
            await self.supervisor.start_seat(key)
        except UnknownProject as error:
            raise ClientRefusal("command", str(error), key) from None
        seat = AgentSeat(
            key=key, cwd=record.cwd, model=record.model, permission_mode=record.permission_mode,
            session_id=record.session_id,
        )  # fmt: skip
        self._seats[key] = seat
        seat.effort = record.effort
        config = worker.SeatConfig(
            cwd=record.cwd,
            cli_path=_cli_path(self.supervisor),
            model=record.model,
            permission_mode=msgspec.convert(record.permission_mode, worker.PermissionMode),
            effort=msgspec.convert(record.effort, worker.Effort | None),
        )
        name = f"agent:{key}"
        handle = self.manager.start(worker.AGENT.spec(name, config=msgspec.to_builtins(config)))
        self._handles[key] = handle
        self._by_worker[name] = key
        handle.on_event(lambda raw: self._on_event(key, raw))
        await self._publish_row(seat)
        try:
            await call(handle, worker.Start(session_id=record.session_id), within=START_WITHIN_S)
        except (RequestFailed, WorkerError) as error:
            why = _start_failure(handle, error)
            await self._drop(key)
            seat.set_lifecycle("failed", why)
            await self._publish_row(seat)
            raise ClientRefusal(
                "command", f"the agent on seat {key} did not start: {why}", key
            ) from None
        if seat.lifecycle == "starting":
            seat.set_lifecycle("idle")
        await self._tell_listeners(key, handle)
        self._save()
        await self._publish_row(seat)
        return seat

    async def _restore(self, record: AgentRecord) -> None:
        try:
            await self._launch(record)
        except ClientRefusal as refusal:
            log.warning("agent_restore_failed", seat=str(record.key), reason=refusal.why)

    async def _drop(self, key: Seat) -> None:
        self._seats.pop(key, None)
        handle = self._handles.pop(key, None)
        if handle is not None:
            self._by_worker.pop(handle.name, None)
            await self.manager.remove(handle.name)
        self._save()

    def _on_event(self, key: Seat, raw: RawEvent) -> None:
        seat = self._seats.get(key)
        event = worker.AGENT.decode_event(raw.event, raw.data)
        if seat is None or event is None:
            return
        if isinstance(event, worker.Say):
            self.tasks.spawn(agent_voice.say(self._speech, key, event.text))
            return
        before = (seat.home_lifecycle(), seat.waiting(), seat.problem)
        recorded = seat.session_id
        self._publish(key, seat.apply(event))
        if seat.session_id != recorded:
            self._save()
        if isinstance(event, worker.Result):
            self._spent(key, event)
        if isinstance(event, worker.PromptLifecycle) and event.phase == "ended":
            self.tasks.spawn(self._turn_ended(seat))
        if (seat.home_lifecycle(), seat.waiting(), seat.problem) != before:
            self.tasks.spawn(self._publish_row(seat))

    def _spent(self, key: Seat, result: worker.Result) -> None:
        spends = usage.spends_of(result, key, epoch_ms(self.supervisor.clock))
        self._spends.extend(spends)
        try:
            self._ledger.append(spends)
        except OSError as error:
            log.warning("agent_usage_unwritable", path=str(self._ledger.path), reason=str(error))

    async def _turn_ended(self, seat: AgentSeat) -> None:
        """A turn ended: measure the context when a page shows the seat (the spec's rule)."""
        if any(c.showing == seat.key for c in self.supervisor.connections):
            await self._measure_context(seat)

    async def _measure_context(self, seat: AgentSeat) -> None:
        handle = self._handles.get(seat.key)
        if handle is None:
            return
        try:
            measured = await call(handle, worker.GetContextUsage(), within=REQUEST_WITHIN_S)
        except (RequestFailed, WorkerError) as error:
            log.info("agent_context_unmeasured", seat=str(seat.key), reason=str(error))
            return
        if self._seats.get(seat.key) is seat:
            self._publish(seat.key, [seat.context_measured(measured)])

    def _holders_moved(self, subject: Subject) -> None:
        """Who can answer moved: each seat with asks says again whether anyone can."""
        for seat in self._seats.values():
            if seat.asks and self._can_answer(seat.key) != self._answerable.get(seat.key):
                self.tasks.spawn(self._publish_row(seat))

    def _can_answer(self, key: Seat) -> bool:
        return any(c.answering for c in self.supervisor.subscribers(session(key)))

    def owns(self, row: WorkerRow) -> bool:
        key = self._by_worker.get(row.name)
        return key is not None and key in self._seats

    def worker_restarting(self, row: WorkerRow) -> None:
        key = self._by_worker[row.name]
        seat = self._seats[key]
        if key not in self._restarting:
            self._restarting.add(key)
            why = f"the agent's worker ended ({row.last_reason or row.last_exit}); restarting it"
            log.warning("agent_worker_lost", seat=str(key), reason=why)
            self._publish(key, seat.worker_lost(why))
            self._publish(
                key, [("agent_problem", {"key": key, "code": "cli_exited", "message": why})]
            )
            self.tasks.spawn(self._publish_row(seat))

    def worker_ready(self, row: WorkerRow) -> None:
        key = self._by_worker[row.name]
        if key in self._restarting:
            self._restarting.discard(key)
            self.tasks.spawn(self._resume(key, self._seats[key]))

    def worker_failed(self, row: WorkerRow) -> None:
        seat = self._seats[self._by_worker[row.name]]
        seat.set_lifecycle("failed", row.last_reason or "the agent's worker kept crashing")
        self.tasks.spawn(self._publish_row(seat))

    async def _resume(self, key: Seat, seat: AgentSeat) -> None:
        handle = self._handles.get(key)
        if handle is None:
            return
        try:
            effort = msgspec.convert(seat.effort, worker.Effort | None)
            start = worker.Start(session_id=seat.session_id, effort=effort)
            await call(handle, start, within=START_WITHIN_S)
        except (RequestFailed, WorkerError) as error:
            seat.set_lifecycle("failed", _start_failure(handle, error))
        else:
            seat.set_lifecycle("idle")
            log.info("agent_resumed", seat=str(key), session_id=seat.session_id)
            await self._tell_listeners(key, handle)
        self._publish(key, [seat.header_update()])
        await self._publish_row(seat)

    # --- helpers -----------------------------------------------------------------------------

    async def _command(
        self, handle: WorkerHandle, key: Seat, request: WorkerRequest[ReplyT]
    ) -> ReplyT:
        """Ask the seat's worker for a command; its refusal is the client's, in its words."""
        return await self.ask(handle, request, what="command", seat=key, within=REQUEST_WITHIN_S)

    def _require(self, key: Seat) -> tuple[AgentSeat, WorkerHandle]:
        seat, handle = self._seats.get(key), self._handles.get(key)
        if seat is None or handle is None:
            raise ClientRefusal("command", f"seat {key} has no agent (spawn one first)", key)
        return seat, handle

    def _publish(self, key: Seat, updates: list[Update]) -> None:
        """Publish on the seat's counter; token appends wait for the loop's next turn (every
        event the worker's read already queued) and cross folded (`fold`)."""
        for update in updates:
            if fold.delta_of(update) is not None:
                held = self._deltas.setdefault(key, [])
                if not held:
                    asyncio.get_running_loop().call_soon(self._flush, key)
                held.append(update)
                continue
            self._flush(key)
            variant, body = update
            self.supervisor.publish_seat_update(key, variant, body)

    def _flush(self, key: Seat) -> None:
        held = self._deltas.pop(key, [])
        if self.supervisor.seats.get(key) is None:
            return
        for (variant, body), span in fold.fold(held):
            self.supervisor.publish_seat_update(key, variant, body, span=span)

    async def _publish_row(self, seat: AgentSeat) -> None:
        state = self.supervisor.seats.get(seat.key)
        if state is None:
            return
        state.lifecycle = seat.home_lifecycle()
        answerable = self._can_answer(seat.key)
        self._answerable[seat.key] = answerable
        waiting = seat.waiting()
        state.waiting = None if waiting is None else {**waiting, "answerable": answerable}
        state.failed = seat.problem if seat.lifecycle in ("crashed", "failed") else None
        await self.supervisor.publish_agents_row(state)

    def _save(self) -> None:
        records = [
            AgentRecord(
                key=seat.key,
                cwd=seat.cwd,
                model=seat.model,
                permission_mode=seat.permission_mode or "default",
                session_id=seat.session_id,
                effort=seat.effort,
            )
            for seat in self._seats.values()
        ]
        try:
            self._records.save(records)
        except OSError as error:
            log.warning("agent_records_unwritable", path=str(self._records.path), reason=str(error))


def install(
    supervisor: Supervisor, manager: WorkerManager, speech: agent_voice.Speech | None = None
) -> AgentService:
    service = AgentService(supervisor, manager, speech=speech)
    service.install()
    return service


def _bag(command: CommandCall, shape: type[Any]) -> Any:
    try:
        return msgspec.convert(command.fields, shape)
    except msgspec.ValidationError as error:
        raise ClientRefusal("command", f"{command.name}: {error}") from None


def _cli_path(supervisor: Supervisor) -> str | None:
    configured = supervisor.loaded.config.agent.cli_path
    return None if configured is None else str(configured)


def _start_failure(handle: WorkerHandle, error: Exception) -> str:
    """Why the agent did not start, in the person's words (the worker's refusal or its row's)."""
    if isinstance(error, RequestFailed):
        return error.message
    return handle.row.last_reason or str(error)


async def _worktree(project: Path, named: str) -> Path:
    """`named` resolved, if it is one of the project's worktrees (`git worktree list`)."""
    try:
        listing = await git.run(project, "worktree", "list", "--porcelain", "-z")
    except git.GitError as error:
        raise ClientRefusal(
            "command", f"the project's worktrees could not be listed: {error}"
        ) from None
    wanted = await asyncio.to_thread(_resolve_among, project, named, listing)
    if wanted is None:
        raise ClientRefusal(
            "command",
            f"worktree {named} is not one of project {project}'s git worktrees (git worktree list)",
        )
    return wanted


def _resolve_among(project: Path, named: str, listing: bytes) -> Path | None:
    """`named` (relative to the project) resolved, if it is a worktree `listing` names."""
    trees = {
        Path(entry[len("worktree ") :].decode()).resolve()
        for entry in listing.split(b"\0")
        if entry.startswith(b"worktree ")
    }
    wanted = (project / Path(named).expanduser()).resolve()
    return wanted if wanted in trees else None
