"""The local executor: a pool of attempt-runner workers under the shared worker manager.

Each runner holds one attempt at a time; `--parallel N` starts N runners. Cancelling an attempt
asks its runner to cancel (which kills and discards it) and waits for the answer. A runner that
dies mid-attempt aborts the run: its attempt's strays are killed here by their marker variable and
its private trees and directory removed, so a resume re-runs that coordinate.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path

from forge.attempt.errors import RunAborted
from forge.attempt.handoff import Handoff
from forge.attempt.record import AttemptRecord
from forge.attempt.run import discard_lost_attempt
from forge.attempt.spec import AttemptSpec
from forge.ipc.errors import RequestFailed, WorkerCrashed, WorkerError
from forge.ipc.manager import WorkerHandle, WorkerManager
from forge.ipc.protocol import call
from forge.workers.lab.protocol import LAB_ATTEMPT, Cancel, Run

ATTEMPT_DEADLINE_S = 7 * 24 * 3600.0
"""Attempts bound themselves (atom, check and re-run timeouts); this only catches a lost reply."""
CANCEL_DEADLINE_S = 60.0


Assign = Callable[[str, WorkerHandle | None], None]
"""Told `(coordinate label, runner)` when a runner takes an attempt, `(label, None)` when it
lets go of it."""


class RunnerPool:
    """An `Executor` backed by `size` attempt-runner workers named `<prefix><n>`."""

    def __init__(
        self,
        manager: WorkerManager,
        size: int,
        out: Path,
        *,
        prefix: str = "lab-attempt-",
        on_assign: Assign | None = None,
    ) -> None:
        self.out = out
        self.manager = manager
        self.on_assign = on_assign
        self.names = [f"{prefix}{index + 1}" for index in range(size)]
        self.idle: asyncio.Queue[WorkerHandle] = asyncio.Queue()
        for name in self.names:
            self.idle.put_nowait(manager.start(LAB_ATTEMPT.spec(name)))

    async def close(self) -> None:
        """Stop the runners and drop their rows (a supervisor outlives many runs)."""
        for name in self.names:
            await self.manager.remove(name)

    async def __call__(self, spec: AttemptSpec) -> AttemptRecord:
        handle = await self.idle.get()
        label = spec.coordinate.label
        if self.on_assign is not None:
            self.on_assign(label, handle)
        try:
            record = await call(
                handle, Run(attempt=Handoff.of(spec, self.out)), within=ATTEMPT_DEADLINE_S
            )
        except asyncio.CancelledError:
            with contextlib.suppress(WorkerError, RequestFailed):
                await asyncio.shield(
                    call(handle, Cancel(attempt_id=spec.attempt_id), within=CANCEL_DEADLINE_S)
                )
            raise
        except RequestFailed as refusal:
            raise RunAborted(
                refusal.message
                if refusal.code == "aborted"
                else f"{spec.coordinate.label}: {refusal.message}"
            ) from None
        except WorkerCrashed as crash:
            await discard_lost_attempt(spec)
            raise RunAborted(
                f"attempt runner crashed during {spec.coordinate.label}: {crash}"
            ) from None
        finally:
            self.idle.put_nowait(handle)
            if self.on_assign is not None:
                self.on_assign(label, None)
        return record
