"""The chaos run's invariants as pure functions: events in, a violation's words (or None) out.

`bench/chaos.py` feeds these from its clients while the run goes on, so a broken rule is caught
when it breaks, with the time and the seed, not only at the end. Nothing here touches a process
or a socket: `tests/bench/test_chaos_checks.py` tests every rule on hand-made events.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TerminalSeq:
    """One viewer's kind-4 numbering: after a view at `seq` S the next chunk is S+1, then +1.

    A fresh view (`view`) may jump anywhere forward: that is the viewer being told. A chunk
    before any view, a gap, a repeat or a step back between two views is a lost or reordered
    byte."""

    expected: int | None = None
    chunks: int = 0
    views: int = 0

    def view(self, seq: int) -> None:
        self.expected = seq + 1
        self.views += 1

    def chunk(self, seq: int) -> str | None:
        self.chunks += 1
        if self.expected is None:
            return f"chunk seq {seq} arrived before any terminal_view"
        if seq != self.expected:
            wanted, self.expected = self.expected, seq + 1
            return f"chunk seq {seq} where {wanted} was due (no fresh view in between)"
        self.expected = seq + 1
        return None


LINE = re.compile(rb"<([A-Z])(\d+)>")


@dataclass
class NumberedLines:
    """The shell's own numbering, read off the bytes a viewer drew: `<F1>`, `<F2>`, ...

    A workload prints `<X n>` markers counting up by one; between two fresh views every number
    must follow the one before. This checks the bytes themselves, not only the frame numbers:
    a chunk lost inside the server with its seq rewritten would still show here."""

    last: dict[bytes, int] = field(default_factory=dict)
    tail: bytes = b""
    seen: int = 0

    def reset(self) -> None:
        """A fresh view: what came before it no longer has to join what comes after."""
        self.last.clear()
        self.tail = b""

    def feed(self, data: bytes) -> list[str]:
        text = self.tail + data
        cut = text.rfind(b"\n")
        if cut < 0:
            self.tail = text[-256:]
            return []
        whole, self.tail = text[: cut + 1], text[cut + 1 :][-256:]
        problems = []
        for match in LINE.finditer(whole):
            series, number = match.group(1), int(match.group(2))
            self.seen += 1
            previous = self.last.get(series)
            if previous is not None and number != previous + 1:
                problems.append(
                    f"line <{series.decode()}{number}> followed <{series.decode()}{previous}>"
                )
            self.last[series] = number
        return problems


@dataclass
class FrameOrder:
    """Browser frames of one viewer's attachment: a tab's seq only ever moves forward."""

    last: dict[tuple[int, int], int] = field(default_factory=dict)
    frames: int = 0

    def reset(self) -> None:
        self.last.clear()

    def frame(self, profile: int, tab: int, seq: int) -> str | None:
        self.frames += 1
        key = (profile, tab)
        previous = self.last.get(key)
        self.last[key] = seq
        if previous is not None and seq <= previous:
            return f"profile {profile} tab {tab}: frame seq {seq} after {previous}"
        return None


def recovery(killed_pid: int, row: Mapping[str, Any] | None) -> str | None:
    """What a worker's home row says after its process `killed_pid` was killed or hung.

    `"recovered"` (ready again in another process), `"reported"` (stopped or failed, with the
    reason on the row, as a terminal host is: its shell died with it), `"gone"` (the row was
    removed, as a stopped terminal's is), or None while it is still on its way."""
    if row is None:
        return "gone"
    state = row.get("state")
    if state == "ready" and row.get("pid") != killed_pid:
        return "recovered"
    if state in ("failed", "stopped") and row.get("last_reason"):
        return "reported"
    return None


def untouched(
    before: Mapping[str, Mapping[str, Any]],
    after: Mapping[str, Mapping[str, Any]],
    spared: Iterable[str],
) -> list[str]:
    """Workers other than the faulted ones (`spared`) that changed pid or restarted meanwhile."""
    skip = set(spared)
    problems = []
    for name, row in before.items():
        if name in skip or row.get("state") != "ready":
            continue
        now = after.get(name)
        if now is None:
            problems.append(f"{name} disappeared")
        elif now.get("pid") != row.get("pid") or now.get("restarts") != row.get("restarts"):
            problems.append(
                f"{name} went from pid {row.get('pid')} restarts {row.get('restarts')} "
                f"to pid {now.get('pid')} restarts {now.get('restarts')}"
            )
    return problems


def slope_per_hour(samples: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value) samples, in value per hour (0 with < 2 points)."""
    if len(samples) < 2:
        return 0.0
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_v = sum(v for _, v in samples) / n
    var = sum((t - mean_t) ** 2 for t, _ in samples)
    if var == 0:
        return 0.0
    cov = sum((t - mean_t) * (v - mean_v) for t, v in samples)
    return cov / var * 3600


def slope_interval(
    samples: Sequence[tuple[float, float]],
    *,
    block_s: float = 300.0,
    draws: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """A 95 % interval for `slope_per_hour` of samples whose noise is not independent (memory
    held by a phone asleep for two minutes lifts a run of samples together): a moving-block
    bootstrap of the fit's residuals in blocks of `block_s`, refitted `draws` times."""
    n = len(samples)
    if n < 3:
        slope = slope_per_hour(samples)
        return slope, slope
    slope = slope_per_hour(samples) / 3600
    mean_t = sum(t for t, _ in samples) / n
    mean_v = sum(v for _, v in samples) / n
    residuals = [v - (mean_v + slope * (t - mean_t)) for t, v in samples]
    step = (samples[-1][0] - samples[0][0]) / (n - 1) or 1.0
    block = max(1, min(n - 1, round(block_s / step)))
    rng = random.Random(seed)
    slopes = []
    for _ in range(draws):
        drawn: list[float] = []
        while len(drawn) < n:
            start = rng.randrange(n - block + 1)
            drawn.extend(residuals[start : start + block])
        refit = [
            (t, mean_v + slope * (t - mean_t) + e)
            for (t, _), e in zip(samples, drawn[:n], strict=True)
        ]
        slopes.append(slope_per_hour(refit))
    return percentile(slopes, 2.5), percentile(slopes, 97.5)


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank percentile (p in 0-100); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def ping_verdict(forge_p99_ms: float, bare_p99_ms: float, goal_ms: float = 50.0) -> str | None:
    """The issue's rule: forge's ping p99 under `goal_ms`, or under twice the bare server's."""
    if forge_p99_ms <= goal_ms or forge_p99_ms <= 2 * bare_p99_ms:
        return None
    return (
        f"ping p99 {forge_p99_ms:.1f} ms: over {goal_ms:.0f} ms and over 2x the bare "
        f"echo server's {bare_p99_ms:.1f} ms"
    )


def gh_writes(
    sent: Sequence[str], delivered: Sequence[str], failed: Sequence[str] = ()
) -> list[str]:
    """Each write the shim accepted (rc 0: delivered or queued) lands exactly once; a write it
    failed for lack of room to spool never lands."""
    problems = []
    counts: dict[str, int] = {}
    for body in delivered:
        counts[body] = counts.get(body, 0) + 1
    for body in sent:
        landed = counts.get(body, 0)
        if landed == 0:
            problems.append(f"gh write {body!r} was accepted and never landed")
        elif landed > 1:
            problems.append(f"gh write {body!r} landed {landed} times")
    for body in failed:
        if counts.get(body, 0):
            problems.append(f"gh write {body!r} failed for its caller and landed anyway")
    return problems


def verdicts(report: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """A Lab report's verdicts per attempt: task, variant, repetition, outcome, hidden
    acceptance, correct and class (what must not depend on the load around the run)."""
    keys = ("task", "variant", "repetition", "outcome", "hiddenAcceptance", "correct", "class")
    return sorted(tuple(str(a.get(k)) for k in keys) for a in report.get("attempts", []))
