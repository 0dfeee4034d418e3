"""`forge status` output from a home snapshot, without processes: the table, JSON, exit codes."""

from __future__ import annotations

import json
from typing import Any

from forge.client.frames import Greeting
from forge.client.status import (
    ANSWERED,
    WORKER_FAILED,
    Status,
    exit_code,
    render_json,
    render_table,
)

GREETING = Greeting(
    version=29, forge_version="0.1.0 · abc1234", forge_version_short="0.1.0+abc1234", settings={}
)
URL = "ws://127.0.0.1:8790/socket"


def worker(name: str, state: str, **fields: Any) -> dict[str, Any]:
    row = {"name": name, "kind": "terminal", "pid": 4242, "state": state, "restarts": 0,
           "last_exit": None, "last_reason": None}  # fmt: skip
    row.update(fields)
    return row


def home(**fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "forge_version": "0.1.0 · abc1234",
        "forge_version_short": "0.1.0+abc1234",
        "boot_id": "b00t",
        "fatal_error": None,
        "projects": [
            {
                "project": {"name": "proj", "org": "acme", "path": "/src/proj", "sessions": 1,
                            "has_model": False},
                "work": {"branch": "main", "changed": 2, "gate": True},
                "would_bind": None,
                "chip": None,
            }
        ],
        "agents": [
            {"slot": {"org": "acme", "project": "proj", "label": "lead"}, "label": "lead",
             "lifecycle": "idle", "last_active_ms": 1_800_000_000_000, "failed": None}
        ],
        "workers": [worker("term-1", "ready")],
    }  # fmt: skip
    data.update(fields)
    return data


def test_the_table_shows_build_boot_projects_seats_and_workers() -> None:
    table = render_table(Status(URL, GREETING, home()))
    assert table.splitlines() == [
        f"forge 0.1.0 · abc1234 (protocol 29) at {URL}",
        "boot b00t",
        "",
        "projects (1)",
        "  PROJECT    PATH       SEATS  BRANCH  CHANGED",
        "  acme/proj  /src/proj  1      main    2",
        "",
        "seats (1)",
        "  SEAT            LIFECYCLE  LAST ACTIVE           FAILED",
        "  acme/proj/lead  idle       2027-01-15 08:00:00Z  -",
        "",
        "workers (1)",
        "  NAME    KIND      PID   STATE  RESTARTS  LAST EXIT  LAST REASON",
        "  term-1  terminal  4242  ready  0         -          -",
    ]


def test_a_failed_worker_shows_its_exit_and_reason_and_exits_1() -> None:
    reason = "6 crashes within 300 s (last: signal SIGKILL)"
    failed = worker(
        "browser-1", "failed", kind="browser", pid=None, restarts=5, last_exit="SIGKILL",
        last_reason=reason,
    )  # fmt: skip
    status = Status(URL, GREETING, home(workers=[worker("term-1", "ready"), failed]))
    rows = render_table(status).splitlines()
    assert rows[-1].split(None, 6) == [
        "browser-1", "browser", "-", "failed", "5", "SIGKILL",
        reason,
    ]  # fmt: skip
    assert exit_code(status) == WORKER_FAILED == 1


def test_restarting_or_stopped_workers_still_answer_0() -> None:
    rows = [worker("a", "restarting"), worker("b", "stopped"), worker("c", "starting")]
    assert exit_code(Status(URL, GREETING, home(workers=rows))) == ANSWERED == 0


def test_empty_sections_say_so() -> None:
    table = render_table(Status(URL, GREETING, home(projects=[], agents=[], workers=[])))
    assert "projects: none configured" in table
    assert "seats: none started" in table
    assert "workers: none running" in table


def test_a_fatal_error_is_shown_under_the_header() -> None:
    status = Status(URL, GREETING, home(fatal_error={"message": "disk full", "at_ms": 0}))
    assert (
        render_table(status).splitlines()[2] == "fatal error: disk full (at 1970-01-01 00:00:00Z)"
    )


def test_json_carries_the_same_facts() -> None:
    decoded = json.loads(render_json(Status(URL, GREETING, home())))
    assert decoded["url"] == URL
    assert decoded["protocol"] == 29
    assert decoded["boot_id"] == "b00t"
    assert decoded["forge_version"] == "0.1.0 · abc1234"
    assert [s["slot"]["label"] for s in decoded["seats"]] == ["lead"]
    assert decoded["projects"][0]["work"]["changed"] == 2
    assert decoded["workers"] == [worker("term-1", "ready")]
