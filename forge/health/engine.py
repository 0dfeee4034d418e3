"""The one owner of the verdict: observations in, a cached, evidence-carrying verdict out.

The verdict is cached in health.json for the TTL so N call sites in one cycle cost at most one
probe; the cache stores the log's fingerprint, so any new observation invalidates it at once.
With no evidence in the window, one probe (`gh api rate_limit`, the real binary, 10 s bound)
runs under a lock, so concurrent status calls share it.
"""

from __future__ import annotations

import fcntl
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from forge.clock import Clock, epoch_ms
from forge.health import obslog, realgh
from forge.health.atomic import write_json
from forge.health.settings import Settings, clock_from_env
from forge.health.verdict import EXIT_CODES, Verdict, classify

PROBE_ARGV: Final = ("api", "rate_limit")
"""The cheapest real API call: no repo context, no quota."""
PROBE_TIMEOUT_S: Final = 10.0
HEALTH_FILE: Final = "health.json"


@dataclass(frozen=True)
class StatusRequest:
    probe: bool = True
    ttl_s: int | None = None
    window_s: int | None = None


def _cached(state_dir: Path, window_s: int, ttl_s: int, now_ms: int) -> Verdict | None:
    try:
        data = json.loads((state_dir / HEALTH_FILE).read_text())
        verdict = Verdict(**data["verdict"])
        fresh = (
            data["fingerprint"] == obslog.fingerprint(state_dir)
            and verdict.window_s == window_s
            and 0 <= now_ms - verdict.computed_at < ttl_s * 1000
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return verdict if fresh else None


def _store(state_dir: Path, verdict: Verdict) -> None:
    write_json(
        state_dir / HEALTH_FILE,
        {"verdict": verdict.to_json(), "fingerprint": obslog.fingerprint(state_dir)},
    )


def _compute(state_dir: Path, window_s: int, clock: Clock, *, probed: bool = False) -> Verdict:
    return classify(obslog.read(state_dir), epoch_ms(clock), window_s, probed=probed)


def verdict(settings: Settings, clock: Clock, request: StatusRequest) -> Verdict:
    """The cached verdict if still good, else a fresh one; probes only when allowed and needed."""
    state = settings.state_dir
    window_s = settings.window_s if request.window_s is None else request.window_s
    ttl_s = settings.ttl_s if request.ttl_s is None else request.ttl_s
    cached = _cached(state, window_s, ttl_s, epoch_ms(clock))
    if cached is not None:
        return cached
    fresh = _compute(state, window_s, clock)
    if fresh.n or not request.probe:
        if fresh.n:
            _store(state, fresh)
        return fresh
    return _probe_once(settings, clock, window_s, ttl_s)


def _probe_once(settings: Settings, clock: Clock, window_s: int, ttl_s: int) -> Verdict:
    state = settings.state_dir
    state.mkdir(parents=True, exist_ok=True)
    with (state / "probe.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # Whoever held the lock before us may have probed already.
        cached = _cached(state, window_s, ttl_s, epoch_ms(clock))
        if cached is not None:
            return cached
        fresh = _compute(state, window_s, clock)
        if fresh.n == 0:
            try:
                gh = realgh.find_real_gh()
            except realgh.NoRealGhError as error:
                return replace(fresh, reason=f"{fresh.reason}, and no probe: {error}")
            realgh.run(
                gh,
                PROBE_ARGV,
                state_dir=state,
                clock=clock,
                timeout_s=PROBE_TIMEOUT_S,
            )
            fresh = _compute(state, window_s, clock, probed=True)
        _store(state, fresh)
        return fresh


def report(
    settings: Settings, clock: Clock, request: StatusRequest, project: Path | None
) -> dict[str, Any]:
    """The verdict with its evidence and the two blocks kept apart from availability."""
    from forge.health import cache_events, queue_summary

    result = verdict(settings, clock, request).to_json()
    window_s = settings.window_s if request.window_s is None else request.window_s
    result["cache"] = cache_events.block(settings.state_dir, epoch_ms(clock), window_s)
    result["queue"] = queue_summary.block(settings.state_dir, project, epoch_ms(clock))
    return result


def exit_code(report_or_verdict: dict[str, Any]) -> int:
    state: str = report_or_verdict["state"]
    return EXIT_CODES[state]  # type: ignore[index]


def status(*, probe: bool = True, project: Path | None = None) -> dict[str, Any]:
    """`forge health --json` as a dict: state, reason, sample, cache, queue and the rest."""
    from forge.health.settings import project_root

    return report(
        Settings.from_env(),
        clock_from_env(),
        StatusRequest(probe=probe),
        project if project is not None else project_root(),
    )


def is_trustworthy(*, probe: bool = True) -> bool:
    """May an empty gh result be believed? Only when the forge is operational."""
    return bool(status(probe=probe)["state"] == "operational")
