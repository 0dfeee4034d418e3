"""The chaos run's invariant checkers (bench/chaos_checks.py), on hand-made events: no process,
no socket. A checker that passes everything would make an hour of chaos prove nothing."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from .scripts import load

checks: Any = load("chaos_checks")


def test_terminal_chunks_follow_their_view_one_by_one() -> None:
    seq = checks.TerminalSeq()
    seq.view(10)
    assert [seq.chunk(n) for n in (11, 12, 13)] == [None, None, None]


def test_a_gap_a_repeat_or_a_step_back_is_caught() -> None:
    for bad in (15, 12, 9):
        seq = checks.TerminalSeq()
        seq.view(10)
        assert seq.chunk(11) is None
        assert seq.chunk(12) is None
        problem = seq.chunk(bad)
        assert problem is not None
        assert f"chunk seq {bad} where 13 was due" in problem


def test_a_fresh_view_may_jump_forward_and_a_chunk_before_any_view_may_not() -> None:
    seq = checks.TerminalSeq()
    assert "before any terminal_view" in seq.chunk(1)
    seq.view(1)
    assert seq.chunk(2) is None
    seq.view(500)  # a stalled viewer's resync: told, so the jump is allowed
    assert seq.chunk(501) is None
    assert seq.chunks == 3
    assert seq.views == 2


def test_after_a_caught_gap_the_count_goes_on_from_what_came() -> None:
    seq = checks.TerminalSeq()
    seq.view(0)
    assert seq.chunk(3) is not None
    assert seq.chunk(4) is None


def test_numbered_lines_across_chunk_boundaries() -> None:
    lines = checks.NumberedLines()
    assert lines.feed(b"<F1> ....\r\n<F2> ..") == []
    assert lines.feed(b"..\r\n<F3> ...\r\n") == []
    assert lines.seen == 3


def test_a_missing_line_is_caught_even_when_frame_numbers_are_whole() -> None:
    lines = checks.NumberedLines()
    assert lines.feed(b"<B7> cc\r\n<B8> cc\r\n<B10> cc\r\n") == ["line <B10> followed <B8>"]


def test_series_are_independent_and_a_view_resets_them() -> None:
    lines = checks.NumberedLines()
    assert lines.feed(b"<F1>\n<S4>\n<F2>\n<S5>\n") == []
    lines.reset()
    assert lines.feed(b"<F90>\n<F91>\n") == []


def test_an_echoed_command_is_not_a_numbered_line() -> None:
    lines = checks.NumberedLines()
    assert lines.feed(b"$ echo '<'S$((3))'>' typed\r\n<S3> typed\r\n") == []
    assert lines.seen == 1


def test_browser_seq_moves_forward_per_tab_and_a_view_resets() -> None:
    order = checks.FrameOrder()
    assert order.frame(1, 2, 5) is None
    assert order.frame(1, 3, 1) is None
    assert order.frame(1, 2, 9) is None  # drops are gaps, and gaps are allowed
    assert order.frame(1, 2, 9) == "profile 1 tab 2: frame seq 9 after 9"
    order.reset()
    assert order.frame(1, 2, 1) is None


@pytest.mark.parametrize(
    ("row", "verdict"),
    [
        ({"state": "ready", "pid": 2}, "recovered"),
        ({"state": "ready", "pid": 1}, None),
        ({"state": "restarting", "pid": None}, None),
        ({"state": "stopped", "pid": None, "last_reason": "killed by SIGKILL"}, "reported"),
        ({"state": "failed", "pid": None, "last_reason": "it kept crashing"}, "reported"),
        ({"state": "failed", "pid": None, "last_reason": None}, None),
        (None, "gone"),
    ],
)
def test_recovery_of_a_worker_killed_as_pid_1(row: dict[str, Any] | None, verdict: str) -> None:
    assert checks.recovery(1, row) == verdict


def test_untouched_names_only_unfaulted_workers_that_changed() -> None:
    before = {
        "walker": {"state": "ready", "pid": 5, "restarts": 0},
        "browser-a": {"state": "ready", "pid": 6, "restarts": 1},
        "terminal-1": {"state": "ready", "pid": 7, "restarts": 0},
        "terminal-2": {"state": "starting", "pid": 8, "restarts": 0},
    }
    after = {
        "walker": {"state": "ready", "pid": 9, "restarts": 1},
        "browser-a": {"state": "ready", "pid": 6, "restarts": 1},
    }
    problems = checks.untouched(before, after, spared={"walker"})
    assert problems == ["terminal-1 disappeared"]
    assert checks.untouched(before, after, spared=set()) == [
        "walker went from pid 5 restarts 0 to pid 9 restarts 1",
        "terminal-1 disappeared",
    ]


def test_slope_is_per_hour_and_flat_is_zero() -> None:
    rising = [(t * 60.0, 100 + t * 0.5) for t in range(30)]  # 0.5 MB a minute
    assert checks.slope_per_hour(rising) == pytest.approx(30.0)
    assert checks.slope_per_hour([(t, 7.0) for t in range(10)]) == 0
    assert checks.slope_per_hour([(1.0, 3.0)]) == 0


def test_percentile_nearest_rank() -> None:
    values = list(range(1, 101))
    assert checks.percentile(values, 99) == 99
    assert checks.percentile(values, 50) == 50
    assert math.isnan(checks.percentile([], 99))


def test_ping_rule_goal_or_twice_the_bare_floor() -> None:
    assert checks.ping_verdict(40, 500) is None
    assert checks.ping_verdict(180, 100) is None
    problem = checks.ping_verdict(250, 100)
    assert problem is not None
    assert "2x the bare echo server's 100.0 ms" in problem


def test_gh_writes_lost_and_duplicated() -> None:
    assert checks.gh_writes(["a", "b"], ["b", "a", "unrelated"]) == []
    assert checks.gh_writes(["a", "b"], ["a", "a"]) == [
        "gh write 'a' landed 2 times",
        "gh write 'b' was accepted and never landed",
    ]


def test_lab_verdicts_ignore_timings_and_order() -> None:
    first = {
        "attempts": [
            {"task": "t1", "variant": "b", "repetition": 1, "outcome": "completed",
             "hiddenAcceptance": False, "correct": False, "class": "rejected", "elapsedMs": 9},
            {"task": "t0", "variant": "a", "repetition": 1, "outcome": "completed",
             "hiddenAcceptance": True, "correct": True, "class": "accepted", "elapsedMs": 3},
        ]
    }  # fmt: skip
    later = {"attempts": [dict(a, elapsedMs=777) for a in reversed(first["attempts"])]}
    assert checks.verdicts(first) == checks.verdicts(later)
    later["attempts"][1]["correct"] = True  # t1 b, which was not correct
    assert checks.verdicts(first) != checks.verdicts(later)


def test_the_slopes_interval_is_wide_when_runs_of_samples_move_together_and_narrow_when_not() -> (
    None
):
    """A resident size lifted for minutes at a time (a phone asleep holding its backlog) says
    less about growth than the same number of independent samples: the interval widens."""
    rng = random.Random(3)
    times = [5.0 * i for i in range(720)]  # an hour, a sample each 5 s
    flat = [(t, 60.0 + rng.gauss(0, 0.5)) for t in times]
    lifted = [
        (t, 60.0 + (3.0 if int(t // 240) % 3 == 0 else 0.0) + rng.gauss(0, 0.5)) for t in times
    ]
    for samples in (flat, lifted):
        low, high = checks.slope_interval(samples, seed=1)
        assert low <= checks.slope_per_hour(samples) <= high
        assert low < 0 < high  # nothing grows
    (flat_low, flat_high), (lifted_low, lifted_high) = (
        checks.slope_interval(flat, seed=1), checks.slope_interval(lifted, seed=1),
    )  # fmt: skip
    assert lifted_high - lifted_low > 3 * (flat_high - flat_low)
    growing = [(t, v + t / 3600 * 2.0) for t, v in flat]  # 2 MB an hour
    assert checks.slope_interval(growing, seed=1)[0] > 1.5
