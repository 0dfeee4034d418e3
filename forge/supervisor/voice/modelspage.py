"""The models page (`dictate_models`), home's `dictate` and `voice` fields, and the bench.

The page shows what the worker said of its models: the dictation model's preflight (its
`Preflight` events, or the worker's row going away) and, once that model is ready, the speaking
model's state (`GetStatus`). `dictate_bench` (`forge dictate bench`) runs the worker's bench once
at a time; its runs are kept in the state folder's `dictate-bench.json`, so a restarted
supervisor shows them again. The snapshot itself is `models.view` (pure).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from forge import paths
from forge.clock import epoch_ms
from forge.health.atomic import write_json
from forge.logs import get_logger
from forge.supervisor.socket.connection import Connection
from forge.supervisor.voice import models
from forge.wire import server
from forge.wire.client import DictateBench
from forge.wire.dictate import Said
from forge.wire.errors import ClientRefusal
from forge.wire.seats import HOME
from forge.wire.server import JsonFrame
from forge.workers.dictate import protocol as worker
from forge.workers.dictate.protocol import ModelState, SpeakingState

if TYPE_CHECKING:
    from forge.supervisor.voice.service import VoiceService

log = get_logger(__name__)

BENCH_S = 1800.0
BENCH_FILE = "dictate-bench.json"


class ModelsPage:
    """The models' states, the bench and its kept runs, and who is told when they change."""

    def __init__(self, service: VoiceService) -> None:
        self._service = service
        self.model = ModelState(state="pending")
        self.speaking: SpeakingState | None = None
        self.preview_error: str | None = None
        self.bench: dict[str, Any] | None = None
        self.speaking_bench: dict[str, Any] | None = None
        self._bench_file = paths.state_dir() / BENCH_FILE
        self.results, self.speaking_results = _read_results(self._bench_file)

    async def view(self) -> dict[str, Any]:
        return models.view(
            self._service.supervisor.loaded.config,
            self.model,
            self.speaking,
            preview_error=self.preview_error,
            bench=self.bench,
            results=self.results,
            speaking_bench=self.speaking_bench,
            speaking_results=self.speaking_results,
        )

    def home_dictate(self) -> dict[str, Any]:
        """Home's `dictate`: whether dictation is on, the model's preflight, where models land."""
        config = self._service.supervisor.loaded.config
        return {
            "enabled": config.dictate.enabled,
            "state": self.model.state,
            "model": self.model.name,
            "error": self.model.error,
            "models_dir": str(config.dictate.models_dir) if config.dictate.models_dir else None,
        }

    def home_voice(self) -> dict[str, Any]:
        """Home's `voice`: whether `[tts]` is on, its engine, where the speaking model lands."""
        tts = self._service.supervisor.loaded.config.tts
        return {
            "enabled": tts.enabled,
            "engine": tts.engine,
            "models_dir": str(tts.piper_model.parent) if tts.piper_model else None,
        }

    def preflight(self, model: ModelState) -> None:
        """The dictation model's new state: shown, and once ready the speaking model's read."""
        self.model = model
        log.info("dictate_preflight", state=model.state, model=model.name, error=model.error)
        tasks = self._service.tasks
        if model.state == "ready":
            self._announce_available()
            tasks.spawn(self._read_speaking())
        tasks.spawn(self._publish())

    async def previewed(self, said: Said) -> None:
        """A voice preview's outcome: the page shows its failure until one succeeds."""
        previous, self.preview_error = self.preview_error, None if said.ok else said.why
        if previous != self.preview_error:
            await self._publish()

    async def _publish(self) -> None:
        supervisor = self._service.supervisor
        frame = JsonFrame.encode(
            server.Update.of("dictate_models_changed", await self.view(), seq=None)
        )
        for connection in supervisor.subscribers("dictate_models"):
            connection.send_frame(frame)

    def _announce_available(self) -> None:
        supervisor = self._service.supervisor
        frame = JsonFrame.encode(server.Update.of("dictate_availability", None, seq=None))
        for connection in supervisor.subscribers(HOME) | supervisor.subscribers("dictate_models"):
            connection.send_frame(frame)

    async def _read_speaking(self) -> None:
        service = self._service
        status = await service.ask_or_log(
            service.worker(), worker.GetStatus(), "dictate_status_unread"
        )
        if status is None:
            return
        self.speaking = status.speaking
        await self._publish()

    async def start_bench(self, connection: Connection, message: DictateBench) -> None:
        if self.bench is not None:
            raise ClientRefusal("dictate_bench", "a bench is already running")
        self.bench = {"target": self.model.name, "tier": "local", "state": "running"}
        tts = self._service.supervisor.loaded.config.tts
        self.speaking_bench = {"state": "queued"} if tts.enabled else None
        await self._publish()
        self._service.tasks.spawn(self._run_bench(connection, message))

    async def _run_bench(self, connection: Connection, message: DictateBench) -> None:
        service = self._service
        speaking = service.supervisor.loaded.config.tts.enabled
        request = worker.Bench(speaking=speaking, clips=message.clips or [])
        try:
            benched = await service.ask(
                service.worker(),
                request,
                what="dictate_bench",
                doing="the bench failed",
                within=BENCH_S,
            )
        except ClientRefusal as refusal:
            answer: dict[str, Any] = {"ok": False, "why": refusal.why}
        else:
            at = epoch_ms(service.supervisor.clock)
            run = {"at": at, "tier": "local", **msgspec.to_builtins(benched.dictation)}
            self.results.append(run)
            if benched.speaking is not None:
                self.speaking_results.append({"at": at, **msgspec.to_builtins(benched.speaking)})
            self._write_results()
            answer = {"ok": True, "run": run, "speaking": msgspec.to_builtins(benched.speaking)}
        self.bench = self.speaking_bench = None
        await self._publish()
        if message.reply_to is not None:
            connection.send(server.Reply(reply_to=message.reply_to, body=answer))
        elif not answer["ok"]:
            connection.send(server.Error(what="dictate_bench", why=answer["why"]))

    def _write_results(self) -> None:
        document = {"results": self.results, "speaking_results": self.speaking_results}
        write_json(self._bench_file, document)


def _read_results(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The bench runs a previous supervisor kept (none when the file is absent or unreadable)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        return list(document["results"]), list(document["speaking_results"])
    except (OSError, ValueError, KeyError, TypeError):
        return [], []
