"""Restart decisions as pure arithmetic: backoff, reset when stable, crash loop, config error."""

from __future__ import annotations

import random
import signal

import pytest

from forge.ipc.exits import CONFIG_ERROR_EXIT, ExitStatus
from forge.ipc.policy import GiveUp, LifecycleTimings, Restart, RestartPolicy

CRASH = ExitStatus(signal=signal.SIGKILL)
NO_JITTER = LifecycleTimings(backoff_jitter=0.0)


def delays(policy: RestartPolicy, times: list[float]) -> list[float | str]:
    out: list[float | str] = []
    for now in times:
        decision = policy.after_exit(now, CRASH, ready_for=1.0)
        out.append(decision.delay if isinstance(decision, Restart) else "give up")
    return out


def test_backoff_doubles_from_half_a_second_to_thirty() -> None:
    timings = LifecycleTimings(backoff_jitter=0.0, crash_limit=100)
    policy = RestartPolicy(timings)
    assert delays(policy, [float(i) for i in range(9)]) == [0.5, 1, 2, 4, 8, 16, 30, 30, 30]


def test_more_than_five_crashes_in_five_minutes_gives_up() -> None:
    policy = RestartPolicy(NO_JITTER)
    assert delays(policy, [0, 1, 2, 3, 4, 5]) == [0.5, 1, 2, 4, 8, "give up"]
    decision = RestartPolicy(NO_JITTER)
    for now in range(5):
        decision.after_exit(float(now), CRASH, None)
    last = decision.after_exit(5.0, CRASH, None)
    assert isinstance(last, GiveUp)
    assert last.reason == "6 crashes within 300 s (last: killed by SIGKILL)"


def test_crashes_older_than_the_window_are_forgotten() -> None:
    policy = RestartPolicy(NO_JITTER)
    assert "give up" not in delays(policy, [0, 100, 200, 290, 299, 301, 420])


def test_a_stable_run_resets_the_backoff() -> None:
    policy = RestartPolicy(NO_JITTER)
    assert delays(policy, [0, 1, 2]) == [0.5, 1, 2]
    decision = policy.after_exit(100.0, CRASH, ready_for=60.0)
    assert decision == Restart(delay=0.5, reason="killed by SIGKILL")


def test_a_configuration_error_is_never_restarted() -> None:
    decision = RestartPolicy(NO_JITTER).after_exit(0.0, ExitStatus(code=CONFIG_ERROR_EXIT), None)
    assert decision == GiveUp("configuration error (exit code 78); not restarting")


def test_jitter_stays_within_its_fraction_and_under_the_cap() -> None:
    timings = LifecycleTimings(backoff_jitter=0.2, crash_limit=1000)
    policy = RestartPolicy(timings, random.Random(7))
    seen = delays(policy, [float(i) for i in range(12)])
    bases = [0.5, 1, 2, 4, 8, 16, 30, 30, 30, 30, 30, 30]
    for delay, base in zip(seen, bases, strict=True):
        assert isinstance(delay, float)
        assert base * 0.8 <= delay <= min(base * 1.2, 30.0)
    assert len(set(seen)) > 6


def test_scaled_timings_keep_the_counts() -> None:
    scaled = LifecycleTimings().scaled(0.1)
    assert scaled.heartbeat_interval == pytest.approx(0.1)
    assert scaled.hang_after == pytest.approx(0.5)
    assert scaled.backoff_max == pytest.approx(3.0)
    assert (scaled.missed_heartbeats, scaled.crash_limit, scaled.backoff_jitter) == (5, 5, 0.2)


@pytest.mark.parametrize(
    ("returncode", "wire", "words"),
    [(0, 0, "exit code 0"), (78, 78, "exit code 78"), (-9, "SIGKILL", "killed by SIGKILL")],
)
def test_exit_status_as_a_row_shows_it(returncode: int, wire: int | str, words: str) -> None:
    status = ExitStatus.from_returncode(returncode)
    assert (status.wire(), status.describe()) == (wire, words)
