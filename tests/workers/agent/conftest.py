"""An agent worker under the real `WorkerManager`, running the real Claude Code CLI (the SDK's
bundled one) against forge's scripted model server: the only fake is the network.

`AgentSeat` starts the worker with the environment the CLI needs (a fresh HOME and config dir,
the model server's URL, a test key, the quiet flags), records every event the worker emits and
lets a test await the next event of a kind: nothing here sleeps. The CLI is a large Node program
that takes seconds to start on a loaded machine, so the deadlines are generous and nothing
asserts on the wall clock.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from forge.ipc.manager import WorkerEvent as RawEvent
from forge.ipc.manager import WorkerHandle, WorkerManager, WorkerState
from forge.ipc.protocol import WorkerEvent, WorkerRequest, call
from forge.testing.model_script import Script, parse_script
from forge.testing.model_server import QUIET_CLI_ENV, ModelServer
from forge.workers.agent.protocol import AGENT, PromptLifecycle, Start, Stop

pytest.importorskip("claude_agent_sdk")

API_KEY = "test-key-not-a-secret"
WITHIN = 120.0
"""Seconds a request or an awaited event may take: the CLI starts slowly on a loaded machine."""

EventT = TypeVar("EventT", bound=WorkerEvent)
ReplyT = TypeVar("ReplyT")


@pytest.fixture(autouse=True)
def _no_outer_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker inherits the test's environment and passes it to the CLI: none of an outer
    session's model, proxy or Claude settings may steer it."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "CLAUDE", "OTEL_")) or name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)


def script(*turns: dict[str, Any]) -> Script:
    return parse_script({"turns": list(turns)})


class AgentSeat:
    """One agent worker, its folders, and every event it emitted (across restarts)."""

    def __init__(self, manager: WorkerManager, server: ModelServer, root: Path) -> None:
        self.manager, self.server = manager, server
        self.home, self.config, self.work = root / "home", root / "claude-config", root / "work"
        for path in (self.home, self.config, self.work):
            path.mkdir()
        self.events: list[WorkerEvent] = []
        self._change = asyncio.Event()
        self.handle: WorkerHandle | None = None

    def env(self, *, api_key: str | None = API_KEY) -> dict[str, str]:
        env = {
            "HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.config),
            "ANTHROPIC_BASE_URL": self.server.url,
            **QUIET_CLI_ENV,
        }
        if api_key is not None:
            env["ANTHROPIC_API_KEY"] = api_key
        return env

    def launch(self, name: str = "agent-1", **config: Any) -> WorkerHandle:
        """Start the worker (not yet the CLI: that is `start`)."""
        env = config.pop("env", None) or self.env()
        seat = {"cwd": str(self.work), **config}
        handle = self.manager.start(AGENT.spec(name, config=seat, env=env))
        handle.on_event(self._record)
        self.handle = handle
        return handle

    async def start(self, session_id: str | None = None, **config: Any) -> WorkerHandle:
        handle = self.launch(**config)
        await self.call(Start(session_id=session_id))
        return handle

    async def call(self, request: WorkerRequest[ReplyT]) -> ReplyT:
        assert self.handle is not None
        return await call(self.handle, request, within=WITHIN)

    def _record(self, raw: RawEvent) -> None:
        event = AGENT.decode_event(raw.event, raw.data)
        assert event is not None, f"undeclared event {raw.event}"
        self.events.append(event)
        self._change.set()
        self._change = asyncio.Event()

    async def until(self, check: Callable[[], bool]) -> None:
        """Return once `check()` holds; asked again on each new event."""
        async with asyncio.timeout(WITHIN):
            while True:
                change = self._change
                if check():
                    return
                await change.wait()

    def of(self, kind: type[EventT], since: int = 0) -> list[EventT]:
        return [event for event in self.events[since:] if isinstance(event, kind)]

    async def next(
        self, kind: type[EventT], where: Callable[[EventT], bool] = lambda _: True, since: int = 0
    ) -> EventT:
        """The first event of `kind` from index `since` on that `where` accepts, once it came."""
        await self.until(lambda: any(where(event) for event in self.of(kind, since)))
        return next(event for event in self.of(kind, since) if where(event))

    async def stop(self) -> None:
        if self.handle is not None and self.handle.row.state is WorkerState.READY:
            await self.call(Stop())


MakeSeat = Callable[[ModelServer], AgentSeat]


def ended(prompt_id: int) -> Callable[[PromptLifecycle], bool]:
    """Accepts the event that ends prompt `prompt_id`."""
    return lambda event: event.prompt_id == prompt_id and event.phase == "ended"


@pytest.fixture
async def manager(forge_dirs: dict[str, Path]) -> AsyncIterator[WorkerManager]:
    async with WorkerManager() as running:
        yield running


@pytest.fixture
def make_seat(manager: WorkerManager, tmp_path: Path) -> Callable[[ModelServer], AgentSeat]:
    def make(server: ModelServer) -> AgentSeat:
        root = tmp_path / f"seat-{len(list(tmp_path.glob('seat-*')))}"
        root.mkdir()
        return AgentSeat(manager, server, root)

    return make
