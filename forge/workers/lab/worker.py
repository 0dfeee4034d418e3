"""The attempt-runner worker: runs one cohort attempt at a time under the shared worker lifecycle.

It is a thin wrapper: `run` rebuilds the spec from the run's frozen inputs and awaits
`forge.attempt.run.run_attempt` under a deathwatch (`forge.attempt.deathwatch`: a runner killed
with its parent takes its attempt's whole tree along, the sandboxed part included); `cancel`
cancels that coroutine, which kills the attempt's process trees and discards its directory
before the reply goes back.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from forge.attempt.command import MARKER_ENV
from forge.attempt.deathwatch import deathwatch
from forge.attempt.errors import LabRefusal, RunAborted
from forge.attempt.record import AttemptRecord
from forge.attempt.run import AttemptSpec, run_attempt
from forge.ipc.errors import RequestFailed
from forge.ipc.worker import Worker, handles
from forge.workers.lab.protocol import LAB_ATTEMPT, Cancel, Cancelled, Run


class AttemptRunner(Worker):
    kind = LAB_ATTEMPT.kind

    async def setup(self) -> None:
        self.running: dict[str, asyncio.Task[Any]] = {}

    @handles(Run)
    async def run(self, request: Run) -> AttemptRecord:
        try:
            spec = request.attempt.spec()
        except LabRefusal as refusal:
            raise RequestFailed("aborted", f"input changed: {refusal}") from None
        attempt = asyncio.create_task(self._watched(spec))
        self.running[spec.attempt_id] = attempt
        try:
            return await asyncio.shield(attempt)
        except asyncio.CancelledError:
            if attempt.done():
                raise RequestFailed(
                    "cancelled", f"attempt {spec.attempt_id} was cancelled"
                ) from None
            attempt.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await attempt
            raise
        except RunAborted as abort:
            raise RequestFailed("aborted", abort.reason) from None
        finally:
            self.running.pop(spec.attempt_id, None)

    async def _watched(self, spec: AttemptSpec) -> AttemptRecord:
        """The attempt under a deathwatch: killed with its trees if this runner dies (with the
        `forge evaluate` or `forge supervise` that started it: kill -9 included)."""
        async with deathwatch(MARKER_ENV, spec.attempt_id):
            return await run_attempt(spec, clock=self.clock)

    @handles(Cancel)
    async def cancel(self, request: Cancel) -> Cancelled:
        """Cancel the named attempt and answer once it has discarded itself."""
        attempt = self.running.get(request.attempt_id)
        if attempt is None:
            return Cancelled(False)
        attempt.cancel()
        await asyncio.wait({attempt})
        return Cancelled(True)

    async def teardown(self) -> None:
        for attempt in self.running.values():
            attempt.cancel()
        if self.running:
            await asyncio.wait(set(self.running.values()))
