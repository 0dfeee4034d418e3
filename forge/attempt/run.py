"""One cohort attempt, as a pipeline of phases (`forge.attempt.phases`): workspace, solve,
capture, score, flakes, record.

`run_attempt` returns the attempt record (the future `attempt.json`) and writes only evidence
files (`changes.diff`, `changes.json`, `verification.json`) under the attempt directory; the caller
writes `attempt.json`, so an attempt that never returned never looks done. Cancelled at any point,
it kills every process it started and removes its directories: a discarded attempt leaves nothing.

The seal: the attempt's trees live in a private 0700 directory outside `--out`
(`phases.workspace`); the recipe runs in a sandbox that shows its workspace, home and task file
(`phases.solve`), and each verification view in its own sandbox that shows that view, a fresh
home and the source's git folder read-only, never the recipe's trees (`phases.score`).

The same coroutine runs in-process, in an attempt-runner worker, or on a Dask worker.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

from forge.attempt.command import MARKER_ENV
from forge.attempt.phases.assemble import Ending, attempt_record
from forge.attempt.phases.capture import capture
from forge.attempt.phases.flakes import flakes
from forge.attempt.phases.provider import Resolver, resolve_host
from forge.attempt.phases.score import score
from forge.attempt.phases.solve import solve
from forge.attempt.phases.workspace import WORK_LINK, Holdings, release, workspace
from forge.attempt.record import AttemptRecord
from forge.attempt.spec import AttemptSpec
from forge.clock import SYSTEM_CLOCK, Clock
from forge.procs import find_by_environ, kill_processes

__all__ = [
    "AttemptSpec",
    "discard_attempt_dir",
    "discard_lost_attempt",
    "iso_utc",
    "run_attempt",
]


async def run_attempt(
    spec: AttemptSpec, *, clock: Clock = SYSTEM_CLOCK, resolver: Resolver = resolve_host
) -> AttemptRecord:
    """Run one attempt and return its record; on cancellation discard everything it made."""
    held = Holdings()
    try:
        return await _pipeline(spec, clock, resolver, held)
    except BaseException:
        await asyncio.shield(held.close_egress())
        await asyncio.shield(asyncio.to_thread(held.discard, spec.attempt_dir))
        raise


async def _pipeline(
    spec: AttemptSpec, clock: Clock, resolver: Resolver, held: Holdings
) -> AttemptRecord:
    started_at = iso_utc(clock.time())
    started = clock.monotonic()
    made = await workspace(spec, clock, held)
    context = made.context
    solved = await solve(made, resolver)
    captured = await capture(context)
    scored = await score(context, solved, captured)
    judged = await flakes(context, scored)
    await context.write_json("verification.json", {"schemaVersion": 1, "views": scored.views})
    egress = held.egress.log.record() if held.egress is not None else None
    await held.close_egress()
    cleanup_error = await release(context)
    await context.hold("record")
    ending = Ending(
        egress=egress,
        cleanup_error=cleanup_error,
        finished_at=iso_utc(clock.time()),
        elapsed_ms=round((clock.monotonic() - started) * 1000),
    )
    return attempt_record(
        spec, started_at, made, solved, captured, scored, judged, context.meter, ending
    )


def iso_utc(epoch: float) -> str:
    """`2026-11-29T20:00:00Z`: the form of every timestamp a Lab file records."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def discard_attempt_dir(attempt_dir: Path) -> None:
    """Remove an attempt whose process died: its private trees (the `work` link's target) and
    its directory under `--out`."""
    link = attempt_dir / WORK_LINK
    if link.is_symlink():
        shutil.rmtree(link.resolve(), ignore_errors=True)
    shutil.rmtree(attempt_dir, ignore_errors=True)


async def discard_lost_attempt(spec: AttemptSpec) -> None:
    """An attempt whose host died or will not answer: its marked processes killed, then its
    trees and directory removed (`discard_attempt_dir`)."""
    strays = await asyncio.to_thread(find_by_environ, MARKER_ENV, spec.attempt_id)
    await kill_processes(strays)
    await asyncio.to_thread(discard_attempt_dir, spec.attempt_dir)
