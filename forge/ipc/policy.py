"""The lifecycle's decisions as pure functions of time and exits, tested without processes.

`LifecycleTimings` names every tunable where it is declared; tests pass `scaled(...)` copies.
`RestartPolicy` decides, after each unrequested exit, whether to restart and after how long:
exponential backoff with jitter, reset after a stable run, `failed` after a crash loop, and never
a restart after a configuration-error exit.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, fields, replace

from forge.ipc.exits import ExitStatus


@dataclass(frozen=True, slots=True)
class LifecycleTimings:
    """Every duration of the worker lifecycle, in seconds."""

    heartbeat_interval: float = 1.0
    """The worker sends a heartbeat this often, from its own event loop."""
    missed_heartbeats: int = 5
    """This many intervals without any message from a ready worker means it hangs."""
    kill_grace: float = 2.0
    """After SIGTERM, the process group gets this long before SIGKILL."""
    hello_timeout: float = 10.0
    """A started worker must say hello within this long (its `setup` included)."""
    stop_timeout: float = 2.0
    """After a `stop` message, the worker gets this long to exit before SIGTERM."""
    request_timeout: float = 10.0
    """The deadline of a request whose caller named none."""
    backoff_initial: float = 0.5
    """The first restart waits this long; each further crash doubles it."""
    backoff_max: float = 30.0
    """The backoff never grows beyond this."""
    backoff_jitter: float = 0.2
    """Each delay is multiplied by a random factor in [1 - jitter, 1 + jitter]."""
    stable_after: float = 60.0
    """A worker ready this long has its backoff reset to `backoff_initial`."""
    crash_limit: int = 5
    """More than this many crashes within `crash_window` marks the worker `failed`."""
    crash_window: float = 300.0

    def scaled(self, factor: float) -> LifecycleTimings:
        """Every duration multiplied by `factor` (counts unchanged), for fast tests."""
        changes = {
            f.name: getattr(self, f.name) * factor
            for f in fields(self)
            if f.name not in ("missed_heartbeats", "crash_limit", "backoff_jitter")
        }
        return replace(self, **changes)

    @property
    def hang_after(self) -> float:
        """Silence longer than this from a ready worker is a hang."""
        return self.heartbeat_interval * self.missed_heartbeats


@dataclass(frozen=True, slots=True)
class Restart:
    """Start the worker again after `delay` seconds."""

    delay: float
    reason: str


@dataclass(frozen=True, slots=True)
class GiveUp:
    """Do not restart; the worker's state becomes `failed` with this reason."""

    reason: str


class RestartPolicy:
    """Backoff and crash-loop bookkeeping for one worker across its generations."""

    def __init__(self, timings: LifecycleTimings, rng: random.Random | None = None) -> None:
        self._timings = timings
        self._rng = rng or random.Random()
        self._crashes: deque[float] = deque()
        self._consecutive = 0

    def after_exit(
        self, now: float, status: ExitStatus, ready_for: float | None
    ) -> Restart | GiveUp:
        """Decide after an exit nobody asked for; `ready_for` is how long it had been ready."""
        t = self._timings
        cause = status.describe()
        if status.is_config_error:
            return GiveUp(f"configuration error ({cause}); not restarting")
        if ready_for is not None and ready_for >= t.stable_after:
            self._consecutive = 0
        self._crashes.append(now)
        while self._crashes and self._crashes[0] <= now - t.crash_window:
            self._crashes.popleft()
        if len(self._crashes) > t.crash_limit:
            return GiveUp(
                f"{len(self._crashes)} crashes within {t.crash_window:g} s (last: {cause})"
            )
        base = min(t.backoff_initial * 2**self._consecutive, t.backoff_max)
        self._consecutive += 1
        jitter = self._rng.uniform(1 - t.backoff_jitter, 1 + t.backoff_jitter)
        return Restart(delay=min(base * jitter, t.backoff_max), reason=cause)
