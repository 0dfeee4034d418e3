"""The attempt-runner worker's protocol: the Lab asks it to run one attempt, or to cancel it."""

from __future__ import annotations

import msgspec

from forge.attempt.handoff import Handoff
from forge.attempt.record import AttemptRecord
from forge.ipc.protocol import WorkerProtocol, WorkerRequest


class Run(WorkerRequest[AttemptRecord], tag="run", frozen=True):
    """Run the attempt to its end; the answer is its record (the future `attempt.json`).

    Refused as `aborted` when the run's inputs changed or the attempt aborted the run, as
    `cancelled` when a `Cancel` stopped it.
    """

    attempt: Handoff


class Cancelled(msgspec.Struct, frozen=True):
    cancelled: bool
    """False when no attempt of that id was running."""


class Cancel(WorkerRequest[Cancelled], tag="cancel", frozen=True, rename="camel"):
    """Cancel a running attempt; answered once it has killed its processes and removed its files."""

    attempt_id: str


LAB_ATTEMPT = WorkerProtocol(kind="lab-attempt", module="forge.workers.lab", requests=(Run, Cancel))
