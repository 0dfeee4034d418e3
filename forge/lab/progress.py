"""Progress on stderr: a live status line on a terminal, plain lines otherwise.

The line shows done/total, accepted so far per variant and each in-flight attempt with its
elapsed time; plain mode prints one line per started and recorded attempt, so logs stay greppable.
An executor may add a note while the run cannot progress (a Dask cluster without a worker): the
live line ends with it, plain mode prints it when it appears and then every `PLAIN_NOTE_S`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

from forge.attempt.record import known
from forge.clock import Clock
from forge.lab.report import outcome_class
from forge.lab.scheduler import ProgressEvent

REFRESH_S = 1.0
PLAIN_NOTE_S = 10.0
"""How often plain mode repeats a standing note."""


@dataclass(frozen=True)
class Step:
    """One thing the display is told: what a `ProgressEvent` says, or a followed run's update."""

    kind: str
    """`started`, `recorded` or `status`; anything else only refreshes the live line."""
    label: str | None
    done: int
    total: int
    accepted: Mapping[str, int]
    in_flight: Mapping[str, float]
    """Label -> monotonic start time, on this process's clock."""
    outcome: str | None = None
    elapsed_ms: int | None = None
    status: str = "running"


def step_of(event: ProgressEvent) -> Step:
    record = event.record
    return Step(
        kind=event.kind,
        label=None if event.coordinate is None else event.coordinate.label,
        done=event.done,
        total=event.total,
        accepted=event.accepted,
        in_flight=event.in_flight,
        outcome=None if record is None else outcome_class(record),
        elapsed_ms=None if record is None else known(record.elapsed_ms),
        status=event.status,
    )


class ProgressDisplay:
    def __init__(self, stream: TextIO, clock: Clock, *, live: bool) -> None:
        self.stream = stream
        self.clock = clock
        self.live = live
        self.last: Step | None = None
        self._note: str | None = None
        self._noted_at: float | None = None
        self._ticker: asyncio.Task[None] | None = None

    def __call__(self, event: ProgressEvent) -> None:
        self.show(step_of(event))

    def show(self, step: Step) -> None:
        self.last = step
        if self.live:
            if step.kind == "recorded" and step.label is not None:
                self._line(f"{step.label}: {step.outcome}")
            self._status()
            return
        if step.kind == "started" and step.label is not None:
            self._line(f"[{step.done}/{step.total}] start {step.label}")
        elif step.kind == "recorded" and step.label is not None:
            accepted = ", ".join(f"{name} {n}" for name, n in step.accepted.items())
            self._line(
                f"[{step.done}/{step.total}] {step.label}: "
                f"{step.outcome} ({step.elapsed_ms} ms); "
                f"accepted so far: {accepted}"
            )
        elif step.kind == "status":
            self._line(f"run {step.status}: {step.done}/{step.total} recorded")

    def note(self, text: str | None) -> None:
        """Show `text` after the status until it is replaced or cleared (None)."""
        self._note = text
        if self.live:
            self._status()
            return
        now = self.clock.monotonic()
        if text is None:
            self._noted_at = None
        elif self._noted_at is None or now - self._noted_at >= PLAIN_NOTE_S:
            self._noted_at = now
            self._line(text)

    def start(self) -> None:
        if self.live:
            self._ticker = asyncio.create_task(self._tick())

    async def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    async def _tick(self) -> None:
        while True:
            await self.clock.sleep(REFRESH_S)
            self._status()

    def _status(self) -> None:
        event = self.last
        parts = []
        if event is not None:
            now = self.clock.monotonic()
            accepted = " ".join(f"{name}:{n}" for name, n in event.accepted.items())
            flying = " ".join(
                f"{label} {now - start:.0f}s" for label, start in event.in_flight.items()
            )
            parts.append(f"{event.done}/{event.total} done | accepted {accepted} | {flying}")
        if self._note is not None:
            parts.append(self._note)
        if not parts:
            return
        self.stream.write("\r\x1b[K" + " | ".join(parts))
        self.stream.flush()

    def _line(self, text: str) -> None:
        prefix = "\r\x1b[K" if self.live else ""
        self.stream.write(f"{prefix}{text}\n")
        self.stream.flush()
