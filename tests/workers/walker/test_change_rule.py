"""The push rule (O-H7) without processes: what moves a seat's process view, and what does not."""

from __future__ import annotations

from typing import Any

import pytest

from forge.supervisor.processes import moved


def row(pid: int, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "pid": pid,
        "ppid": 1,
        "name": "sh",
        "cmdline": ["/bin/sh"],
        "cpu_percent": 10.0,
        "rss_bytes": 1000,
        "started_ms": 1_700_000_000_000 + pid,
    }
    return {**base, **fields}


SHELL = [row(10), row(11, ppid=10, name="sleep", cmdline=["sleep", "30"])]


def test_a_first_walk_is_pushed_and_nothing_after_nothing_is_not() -> None:
    assert moved(None, SHELL)
    assert moved(None, [])
    assert not moved(None, None)


def test_a_session_that_ended_is_cleared_once() -> None:
    assert moved(SHELL, None)
    assert moved([], None)


def test_the_same_walk_is_not_pushed() -> None:
    assert not moved(SHELL, [dict(r) for r in SHELL])


def test_a_process_that_came_or_went_is_pushed() -> None:
    assert moved(SHELL, [*SHELL, row(12, ppid=10)])
    assert moved(SHELL, SHELL[:1])
    assert moved(SHELL, [])


def test_a_reused_pid_is_a_new_process() -> None:
    reborn = row(11, ppid=10, name="sleep", cmdline=["sleep", "30"], started_ms=1)
    assert moved(SHELL, [SHELL[0], reborn])


def test_a_process_that_execd_another_program_is_pushed() -> None:
    forked = [row(10), row(11, ppid=10)]
    assert moved(forked, SHELL)


def test_order_alone_does_not_move_a_view() -> None:
    assert not moved(SHELL, list(reversed(SHELL)))


@pytest.mark.parametrize(
    ("cpu", "expected"),
    [(14.9, False), (5.1, False), (15.0, True), (5.0, True), (0.0, True), (40.0, True)],
)
def test_cpu_moves_a_view_at_five_points(cpu: float, expected: bool) -> None:
    assert moved(SHELL, [SHELL[0], {**SHELL[1], "cpu_percent": cpu}]) is expected


@pytest.mark.parametrize(
    ("rss", "expected"),
    [(1099, False), (901, False), (1100, True), (900, True), (0, True), (5000, True)],
)
def test_rss_moves_a_view_at_ten_percent(rss: int, expected: bool) -> None:
    assert moved(SHELL, [SHELL[0], {**SHELL[1], "rss_bytes": rss}]) is expected


def test_rss_is_measured_against_what_was_published_so_a_slow_creep_is_pushed() -> None:
    published = SHELL
    pushes = 0
    for rss in range(1000, 1300, 20):  # 2 % a walk
        walk = [SHELL[0], {**SHELL[1], "rss_bytes": rss}]
        if moved(published, walk):
            published, pushes = walk, pushes + 1
    assert pushes == 2
    assert published[1]["rss_bytes"] == 1220


def test_a_process_with_no_memory_is_pushed_only_when_it_gains_some() -> None:
    empty = [{**SHELL[0], "rss_bytes": 0}]
    assert not moved(empty, [dict(empty[0])])
    assert moved(empty, [{**SHELL[0], "rss_bytes": 1}])
