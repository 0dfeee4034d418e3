"""The liveness rule without a socket: the write bound, the watchdog, and idle as progress."""

from __future__ import annotations

from forge.supervisor.socket.liveness import WATCHDOG, WRITE_TIMEOUT, Liveness


def rule(progress_at: float = 0.0) -> Liveness:
    return Liveness(write_timeout_s=60, watchdog_s=240, progress_at=progress_at)


def test_the_tick_is_a_quarter_of_the_shorter_bound() -> None:
    assert rule().tick_s == 15


def test_one_write_in_flight_for_the_bound_times_out() -> None:
    liveness = rule()
    assert liveness.check(59.9, write_started=0.0, busy=True) is None
    assert liveness.check(60.0, write_started=0.0, busy=True) == WRITE_TIMEOUT


def test_busy_without_a_completed_write_for_four_bounds_trips_the_watchdog() -> None:
    liveness = rule()
    assert liveness.check(180.0, busy=True, write_started=None) is None  # a 3x-bound encode lives
    assert liveness.check(240.0, busy=True, write_started=None) == WATCHDOG


def test_a_completed_write_is_progress() -> None:
    liveness = rule()
    liveness.wrote(200.0)
    assert liveness.check(400.0, busy=True, write_started=None) is None
    assert liveness.check(440.0, busy=True, write_started=None) == WATCHDOG


def test_an_idle_connection_is_never_reaped() -> None:
    liveness = rule()
    for hour in range(1, 25):
        assert liveness.check(hour * 3600.0, busy=False, write_started=None) is None
    assert liveness.check(24 * 3600.0 + 239, busy=True, write_started=None) is None
