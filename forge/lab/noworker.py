"""How long a Dask cluster has had no worker while attempts wait, and when that ends the run.

A scheduler holds a task until some worker joins, so a cluster whose last worker died would hold
the run forever. The executor looks at the scheduler's worker count every few seconds and feeds
it here, with the injected clock's time; this says how long the current wait has lasted (for the
progress line) and whether it passed `[lab] dask_no_worker_s`. A worker joining, or nothing
waiting, ends the wait; the next one starts from zero.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class NoWorkerWait:
    bound_s: float
    since: float | None = None
    """When the current wait began (monotonic seconds), or None while there is no wait."""

    def observe(self, now: float, *, workers: int, waiting: int) -> float | None:
        """Seconds this wait has lasted, or None while a worker is there or nothing waits."""
        if workers > 0 or waiting == 0:
            self.since = None
            return None
        if self.since is None:
            self.since = now
        return now - self.since

    def expired(self, waited: float | None) -> bool:
        return waited is not None and waited >= self.bound_s


def waiting_note(waited: float) -> str:
    """The progress line's words for a wait."""
    return f"waiting for a Dask worker ({waited:.0f} s)"
