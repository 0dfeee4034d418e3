"""forge's scripted model server on an event loop of its own thread, for synchronous callers
(Playwright's sync API in the browser tests): the same `ModelServer`, driven across threads.

`play(script)` hands the next requests a new script from its first turn, so one server (one URL
in a supervisor's environment) serves test after test; the requests recorded so far are kept.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable
from types import TracebackType
from typing import Any, Self, TypeVar

from forge.testing.model_script import Script, parse_script
from forge.testing.model_server import ModelServer, RecordedRequest

T = TypeVar("T")


class ModelServerThread:
    """`with ModelServerThread() as model:` then `model.url`, `model.play(...)`."""

    def __init__(self, script: Script | None = None) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="model-server", daemon=True
        )
        self.server = ModelServer(script or parse_script({"turns": []}))

    def _run(self, work: Awaitable[T], timeout: float | None = None) -> T:
        async def wrapped() -> T:
            return await work

        return asyncio.run_coroutine_threadsafe(wrapped(), self._loop).result(timeout)

    def __enter__(self) -> Self:
        self._thread.start()
        self._run(self.server.start())
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._run(self.server.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    @property
    def url(self) -> str:
        return self.server.url

    def play(self, *turns: dict[str, Any]) -> None:
        """The next requests are answered from these turns (as `parse_script` reads them)."""
        script = parse_script({"turns": list(turns)})

        async def swap() -> None:
            self.server.script = script
            self.server.played = []

        self._run(swap())

    def wait_stalled(self, timeout: float) -> RecordedRequest:
        """The request whose stream the script holds now, once there is one."""
        return self._run(self.server.wait_stalled(), timeout)

    def release(self) -> None:
        """Let every held stream go on."""

        async def release() -> None:
            self.server.release()

        self._run(release())
