"""The service base every feature stands on, with a real worker process and a real socket: a
worker's refusal reaches the client as its refusal of the verb, a worker's rows reach the hooks
of the service that owns it, and every exception the supervisor defines is named by who is at
fault."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

import forge.supervisor
from forge.client.auth import subprotocols
from forge.errors import ForgeError, PeerError, UserError
from forge.ipc.errors import RequestFailed
from forge.ipc.manager import WorkerHandle, WorkerManager, WorkerRow
from forge.supervisor.service import TaskSet, WorkerService
from forge.supervisor.socket.connection import Connection
from forge.supervisor.socket.core import Supervisor
from forge.testing.misbehaving_protocol import MISBEHAVING, Sleep
from forge.testing.supervised import ask
from forge.wire.client import TerminalDetach
from tests.ipc.helpers import TEST_TIMINGS


class _Sleeper(WorkerService):
    """A feature whose one verb asks its worker; it records the rows its hooks hear."""

    name = "sleeper"

    def __init__(self, supervisor: Supervisor, manager: WorkerManager, handle: WorkerHandle):
        super().__init__(supervisor, manager)
        self.handle = handle
        self.heard: list[tuple[str, WorkerRow]] = []
        self.failed = asyncio.Event()

    def install(self) -> None:
        self.supervisor.register_verb(TerminalDetach, self._verb)
        super().install()

    async def _verb(self, connection: Connection, message: TerminalDetach) -> None:
        # `seconds` must be a float: the worker refuses the request when it decodes it.
        await self.ask(self.handle, Sleep(seconds="long"), what="terminal_detach")

    def owns(self, row: WorkerRow) -> bool:
        return row.name == self.handle.name

    def worker_ready(self, row: WorkerRow) -> None:
        self.heard.append(("ready", row))

    def worker_restarting(self, row: WorkerRow) -> None:
        self.heard.append(("restarting", row))

    def worker_failed(self, row: WorkerRow) -> None:
        self.heard.append(("failed", row))
        self.failed.set()


@pytest.fixture
async def manager(forge_dirs: dict[str, Path]) -> AsyncIterator[WorkerManager]:
    async with WorkerManager(timings=TEST_TIMINGS) as running:
        yield running


async def test_a_workers_refusal_is_the_clients_refusal_of_its_verb(
    served: Supervisor, manager: WorkerManager
) -> None:
    handle = manager.start(MISBEHAVING.spec("sleeper"))
    _Sleeper(served, manager, handle).install()
    port = served.loaded.config.server.port
    async with connect(f"ws://127.0.0.1:{port}/socket", subprotocols=subprotocols()) as client:
        await client.recv(), await client.recv()
        answer = await ask(client, {"kind": "terminal_detach"})
    assert answer["kind"] == "error"
    assert answer["what"] == "terminal_detach"
    assert answer["why"].startswith("sleep: Expected `float`, got `str`")  # its words, no code


def test_a_workers_refusal_is_a_peers_fault_not_a_users() -> None:
    """A refused request is the asker's: never a CLI user error (exit code 2)."""
    assert issubclass(RequestFailed, PeerError)
    assert not issubclass(RequestFailed, UserError)


def test_every_exception_the_supervisor_defines_is_under_forge_errors() -> None:
    strays = []
    for found in pkgutil.walk_packages(forge.supervisor.__path__, "forge.supervisor."):
        module = importlib.import_module(found.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            defined_here = cls.__module__ == module.__name__
            if defined_here and issubclass(cls, BaseException) and not issubclass(cls, ForgeError):
                strays.append(f"{module.__name__}.{cls.__name__}")
    assert strays == []


async def test_a_failing_workers_rows_reach_the_hooks_of_the_service_that_owns_it(
    served: Supervisor, manager: WorkerManager
) -> None:
    handle = manager.start(MISBEHAVING.spec("crasher", config={"crash_on_start": True}))
    other = manager.start(MISBEHAVING.spec("bystander"))
    service = _Sleeper(served, manager, handle)
    service.install()
    await service.failed.wait()
    states = [state for state, _ in service.heard]
    assert "restarting" in states
    assert states[-1] == "failed"
    assert {row.name for _, row in service.heard} == {"crasher"}
    await manager.stop(other.name)


async def test_a_task_set_forgets_an_ended_task_and_stops_what_still_runs() -> None:
    tasks = TaskSet("probe")
    never = asyncio.Event()

    async def fails() -> None:
        raise RuntimeError("boom")

    failing = tasks.spawn(fails())
    waiting = tasks.spawn(never.wait())
    await asyncio.gather(failing, return_exceptions=True)  # the set's callback ran first
    assert len(tasks) == 1
    await tasks.stop()
    assert waiting.cancelled()
    assert len(tasks) == 0
