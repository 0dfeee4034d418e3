"""Dictation and voice on the socket, over the one dictate worker.

`VoiceService` composes the parts, each one idea: `takes` (a take from `dictate_stream` to its
end, its audio to the worker), `speech` (who listens to a seat, and `speak`: the worker's clips
to them) and `modelspage` (the `dictate_models` page, home's `dictate` and `voice` fields, the
bench). The service keeps the worker: started on install when `[dictate]` or `[tts]` is on (else
on first use), its events routed to the parts; a worker that dies mid-take fails every take it
had begun (`dictate_failed`) and the manager restarts it, so the next take works. The agent
seats are reached through `AgentDoor`, which the composition root sets.

The parts import only the worker kind's protocol (`forge.workers.dictate.protocol`).
"""

from __future__ import annotations

from typing import Protocol

from forge.ipc.manager import WorkerEvent, WorkerHandle, WorkerManager, WorkerRow
from forge.supervisor.service import WorkerService
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.core import Supervisor
from forge.supervisor.voice.modelspage import ModelsPage
from forge.supervisor.voice.speech import Speech
from forge.supervisor.voice.takes import Takes
from forge.wire.binary import Dictation
from forge.wire.client import (
    DictateBench,
    DictateCancel,
    DictateStop,
    DictateStream,
    VoiceMode,
    VoicePreview,
    VoiceSay,
)
from forge.wire.seats import Seat
from forge.workers.dictate import protocol as worker
from forge.workers.dictate.protocol import DICTATE, ModelState

WORKER_NAME = "dictate"


class AgentDoor(Protocol):
    """Agent seats as the voice area reaches them (the agent service; the composition root
    joins the two, which import nothing of each other)."""

    def has_agent(self, key: Seat) -> bool: ...

    async def dictated(self, key: Seat, text: str) -> str:
        """Send `text` as the seat's next prompt (source `dictation`); its uuid. Raises
        `ClientRefusal` naming why not."""
        ...

    def voice_changed(self, key: Seat, note: str | None) -> None:
        """The seat's listener count changed (`SeatState.voice_listeners`); `note` is the
        `[Voice]` note for its agent, when one is due."""
        ...


class VoiceService(WorkerService):
    """The dictate worker, and the parts that serve takes, speech and the models page over it."""

    name = "dictate"

    def __init__(self, supervisor: Supervisor, manager: WorkerManager) -> None:
        super().__init__(supervisor, manager)
        self.handle: WorkerHandle | None = None
        """The worker, once started (`worker()` starts it)."""
        self.agents: AgentDoor | None = None
        """Set by the composition root when agent seats are served."""
        self.takes = Takes(self)
        self.speech = Speech(self)
        self.page = ModelsPage(self)

    def install(self) -> None:
        s = self.supervisor
        s.register_verb(DictateStream, self.takes.stream)
        s.register_verb(DictateStop, self.takes.stop)
        s.register_verb(DictateCancel, self.takes.cancel)
        s.register_verb(VoiceMode, self.speech.voice_mode)
        s.register_verb(VoicePreview, self.speech.voice_preview)
        s.register_verb(VoiceSay, self.speech.voice_say)
        s.register_verb(DictateBench, self.page.start_bench)
        s.register_binary(Dictation, self.takes.audio)
        s.register_subject("dictate_models", self.page.view)
        s.home_fields["dictate"] = self.page.home_dictate
        s.home_fields["voice"] = self.page.home_voice
        s.on_disconnect(self._disconnected)
        super().install()
        config = s.loaded.config
        if config.dictate.enabled or config.tts.enabled:
            self.worker()

    def worker(self) -> WorkerHandle:
        """The dictate worker, started on first use."""
        if self.handle is None:
            config = self.supervisor.loaded.config
            spec = DICTATE.spec(
                WORKER_NAME,
                config={
                    "preflight": config.dictate.enabled,
                    "models_dir": str(config.dictate.models_dir or "") or None,
                    "tts": {
                        "engine": config.tts.engine,
                        "voice": config.tts.voice,
                        "piper_model": str(config.tts.piper_model or "") or None,
                    },
                },
            )
            self.handle = self.manager.start(spec)
            self.handle.on_event(self._on_event)
        return self.handle

    def _on_event(self, event: WorkerEvent) -> None:
        typed = DICTATE.decode_event(event.event, event.data)
        if isinstance(typed, worker.Preflight):
            self.page.preflight(typed.model)
        elif isinstance(
            typed, worker.TakeLevel | worker.TakePhase | worker.TakePartial | worker.TakeFailed
        ):
            self.takes.heard(typed)

    def owns(self, row: WorkerRow) -> bool:
        return row.name == WORKER_NAME

    def worker_restarting(self, row: WorkerRow) -> None:
        self.takes.fail_began(row)
        if self.page.model.state != "pending":
            self.page.preflight(ModelState(state="pending", error=row.last_reason))

    def worker_failed(self, row: WorkerRow) -> None:
        self.takes.fail_began(row)
        error = f"the worker failed: {row.last_reason}"
        self.page.preflight(ModelState(state="failed", error=error))

    def worker_stopped(self, row: WorkerRow) -> None:
        self.takes.fail_began(row)

    def _disconnected(self, connection: Connection) -> None:
        self.takes.left(connection)
        self.speech.left(connection)


def install(supervisor: Supervisor, manager: WorkerManager) -> VoiceService:
    """Serve dictation and voice on `supervisor`, with a dictate worker started by `manager`."""
    service = VoiceService(supervisor, manager)
    service.install()
    return service
