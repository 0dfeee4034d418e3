"""The verdict over the window: a pure function from observations to one of four states.

Rules, in order, over the newest `SAMPLE_SIZE` evidence-bearing observations inside the window
(`other` never reached the forge and is no evidence, so it takes no slot):
no observations -> unknown; no availability failures -> operational; failures and no successes ->
unreachable when network failures are more than half of them, else degraded; failures alongside
successes -> degraded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, Literal

from forge.health.signals import AVAILABILITY_FAILURES, SIGNALS, SUCCESSES, Signal

State = Literal["operational", "degraded", "unreachable", "unknown"]

STATES: Final[tuple[State, ...]] = ("operational", "degraded", "unreachable", "unknown")
SAMPLE_SIZE: Final = 10
EXIT_CODES: Final[dict[State, int]] = {
    "operational": 0,
    "degraded": 3,
    "unreachable": 4,
    "unknown": 5,
}
"""`forge health` answers with its exit code, so shell call sites need no parsing."""


@dataclass(frozen=True)
class Observation:
    """One row of observations.log: `ts_ms, rc, ms, signal, sub`."""

    ts_ms: int
    rc: int
    ms: int
    signal: Signal
    sub: str


@dataclass(frozen=True)
class Verdict:
    state: State
    reason: str
    sample: dict[str, int] = field(default_factory=dict)
    window_s: int = 300
    n: int = 0
    computed_at: int = 0
    probed: bool = False

    def to_json(self) -> dict[str, object]:
        return {
            "state": self.state,
            "reason": self.reason,
            "sample": dict(self.sample),
            "window_s": self.window_s,
            "n": self.n,
            "computed_at": self.computed_at,
            "probed": self.probed,
        }


def in_window(observations: Iterable[Observation], now_ms: int, window_s: int) -> list[Observation]:
    """Observations no older than the window (a clock skewed into the future still counts)."""
    oldest = now_ms - window_s * 1000
    return [obs for obs in observations if obs.ts_ms >= oldest]


def sample_of(observations: Iterable[Observation], now_ms: int, window_s: int) -> list[Observation]:
    """The newest SAMPLE_SIZE evidence-bearing observations inside the window, oldest first."""
    evidence = [obs for obs in in_window(observations, now_ms, window_s) if obs.signal != "other"]
    evidence.sort(key=lambda obs: obs.ts_ms)
    return evidence[-SAMPLE_SIZE:]


def classify(
    observations: Iterable[Observation], now_ms: int, window_s: int, *, probed: bool = False
) -> Verdict:
    """Same observations, same verdict, no I/O."""
    sample = sample_of(observations, now_ms, window_s)
    counts = Counter(obs.signal for obs in sample)
    sample_counts: dict[str, int] = {signal: counts[signal] for signal in SIGNALS if counts[signal]}
    failures = sum(counts[signal] for signal in AVAILABILITY_FAILURES)
    successes = sum(counts[signal] for signal in SUCCESSES)
    state, reason = _rule(counts, failures, successes, len(sample), window_s)
    return Verdict(
        state=state,
        reason=reason,
        sample=sample_counts,
        window_s=window_s,
        n=len(sample),
        computed_at=now_ms,
        probed=probed,
    )


def _rule(
    counts: Counter[Signal], failures: int, successes: int, n: int, window_s: int
) -> tuple[State, str]:
    if n == 0:
        return "unknown", f"no evidence in the last {window_s}s"
    if failures == 0:
        return "operational", f"{successes} of {n} recent calls answered"
    causes = ", ".join(
        f"{signal} {counts[signal]}"
        for signal in ("net", "server", "ratelimit", "auth")
        if counts[signal]
    )
    if successes == 0:
        if counts["net"] * 2 > failures:
            return (
                "unreachable",
                f"every recent call failed, mostly at the network layer ({causes})",
            )
        return "degraded", f"every recent call failed ({causes})"
    return "degraded", f"{failures} of {n} recent calls failed ({causes})"


def parse_line(line: str) -> Observation | None:
    """One TSV row, or None for a row that is torn or foreign (readers skip it)."""
    fields = line.rstrip("\n").split("\t")
    if len(fields) != 5 or fields[3] not in SIGNALS:
        return None
    try:
        return Observation(int(fields[0]), int(fields[1]), int(fields[2]), fields[3], fields[4])
    except ValueError:
        return None


def format_line(obs: Observation) -> str:
    return f"{obs.ts_ms}\t{obs.rc}\t{obs.ms}\t{obs.signal}\t{obs.sub}\n"
