"""A walked forest as wire rows (O-H7), from hand-built trees."""

from __future__ import annotations

from forge.procs import ProcessInfo
from forge.workers.walker.rows import process_rows


def info(pid: int, ppid: int, *children: ProcessInfo, sid: int = 10) -> ProcessInfo:
    return ProcessInfo(
        pid=pid,
        ppid=ppid,
        name=f"p{pid}",
        cmdline=(f"p{pid}", "--flag", "two words"),
        status="sleeping",
        cpu_percent=12.345,
        cpu_seconds=1.5,
        rss=4096 * pid,
        started=1_700_000_000.25,
        pgid=pid,
        sid=sid,
        own_session=sid != 10,
        children=children,
    )


def test_rows_are_flat_parents_first_with_the_wire_fields() -> None:
    forest = [info(10, 1, info(11, 10, info(13, 11)), info(12, 10, sid=12)), info(20, 1)]
    rows = process_rows(forest)
    assert [(r["pid"], r["ppid"]) for r in rows] == [(10, 1), (11, 10), (13, 11), (12, 10), (20, 1)]
    assert rows[0] == {
        "pid": 10,
        "ppid": 1,
        "name": "p10",
        "cmdline": ["p10", "--flag", "two words"],
        "cpu_percent": 12.3,
        "rss_bytes": 40960,
        "started_ms": 1_700_000_000_250,
    }


def test_a_process_reached_twice_is_listed_once() -> None:
    child = info(11, 10)
    assert [r["pid"] for r in process_rows([info(10, 1, child), child])] == [10, 11]


def test_nothing_walked_is_an_empty_list() -> None:
    assert process_rows([]) == []
