"""The console's human lines (`forge.logs.human_line`): a record as one line a person reads."""

from __future__ import annotations

import re

from forge.logs import human_line


def test_fields_follow_the_name_and_a_value_with_spaces_is_quoted() -> None:
    line = human_line(
        None,
        "warning",
        {
            "why": "no sandbox here",
            "port": 8790,
            "seats": ["a/b/c"],
            "empty": "",
            "process": "supervisor",
            "pid": 7,
            "level": "warning",
            "ts": "2026-12-07T15:21:28.000001Z",
            "record": "browser_sandbox_off",
        },
    )
    time, rest = line.split(" ", 1)
    assert re.fullmatch(r"\d\d:\d\d:\d\d", time)
    assert (
        rest
        == 'warning browser_sandbox_off why="no sandbox here" port=8790 seats=["a/b/c"] empty=""'
    )


def test_a_traceback_follows_on_the_lines_below() -> None:
    line = human_line(
        None,
        "error",
        {"level": "error", "record": "boom", "exception": "Traceback ...\nValueError: x"},
    )
    assert line == "error boom\nTraceback ...\nValueError: x"
