"""`forge status`: what a running supervisor says about itself, as a table or as JSON. Pure.

The facts are the greeting's and the home subject's (H01, D4): the build, the boot id, the
projects, the started seats (home `agents`), one row per worker process, and whether Chromium
runs without its sandbox (home `browser_sandbox_off`, as root). `fetch_status` is
the only I/O here; `render_table`, `render_json` and `exit_code` are plain functions of it.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from forge.client.connection import connect
from forge.client.errors import ConnectionLost, SupervisorUnreachable
from forge.client.frames import Greeting
from forge.wire.seats import HOME

ANSWERED = 0
"""The supervisor answered and no worker is `failed`."""
WORKER_FAILED = 1
"""The supervisor answered and at least one worker is `failed` (it stopped restarting)."""

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Status:
    url: str
    greeting: Greeting
    home: Row


async def fetch_status(url: str, *, tls: ssl.SSLContext | None = None) -> Status:
    """Connect, subscribe home, and keep its snapshot; raises SupervisorUnreachable."""
    async with connect(url, tls=tls) as connection:
        try:
            home = await connection.subscribe(HOME)
        except ConnectionLost as lost:
            raise SupervisorUnreachable(url, f"no home snapshot ({lost.reason})") from None
        return Status(url, connection.greeting, home)


def exit_code(status: Status) -> int:
    return WORKER_FAILED if any(w.get("state") == "failed" for w in _workers(status)) else ANSWERED


def render_json(status: Status) -> str:
    home = status.home
    return json.dumps(
        {
            "url": status.url,
            "protocol": status.greeting.version,
            "forge_version": home.get("forge_version", status.greeting.forge_version),
            "forge_version_short": home.get(
                "forge_version_short", status.greeting.forge_version_short
            ),
            "boot_id": home.get("boot_id"),
            "fatal_error": home.get("fatal_error"),
            "browser_sandbox_off": home.get("browser_sandbox_off"),
            "projects": home.get("projects") or [],
            "seats": home.get("agents") or [],
            "workers": _workers(status),
        },
        indent=2,
    )


def render_table(status: Status) -> str:
    home = status.home
    version = home.get("forge_version", status.greeting.forge_version)
    lines = [
        f"forge {version} (protocol {status.greeting.version}) at {status.url}",
        f"boot {home.get('boot_id') or '-'}",
    ]
    fatal = home.get("fatal_error")
    if fatal:
        lines.append(f"fatal error: {fatal.get('message')} (at {_when(fatal.get('at_ms'))})")
    sandbox_off = home.get("browser_sandbox_off")
    if sandbox_off:
        lines.append(f"browser: {sandbox_off}")
    projects = home.get("projects") or []
    lines += _section(
        "projects",
        "none configured",
        ("PROJECT", "PATH", "SEATS", "BRANCH", "CHANGED"),
        [_project_cells(row) for row in projects],
    )
    seats = home.get("agents") or []
    lines += _section(
        "seats",
        "none started",
        ("SEAT", "LIFECYCLE", "LAST ACTIVE", "FAILED"),
        [_seat_cells(row) for row in seats],
    )
    lines += _section(
        "workers",
        "none running",
        ("NAME", "KIND", "PID", "STATE", "RESTARTS", "LAST EXIT", "LAST REASON"),
        [_worker_cells(row) for row in _workers(status)],
    )
    return "\n".join(lines)


def _workers(status: Status) -> list[Row]:
    workers: list[Row] = status.home.get("workers") or []
    return workers


def _section(
    title: str, empty: str, header: Sequence[str], rows: list[tuple[str, ...]]
) -> list[str]:
    if not rows:
        return ["", f"{title}: {empty}"]
    return ["", f"{title} ({len(rows)})", *_columns(header, rows)]


def _columns(header: Sequence[str], rows: list[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns two spaces apart; the last column is not padded."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = []
    for row in (tuple(header), *rows):
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def _project_cells(row: Row) -> tuple[str, ...]:
    project = row.get("project") or {}
    work = row.get("work") or {}
    return (
        f"{project.get('org')}/{project.get('name')}",
        str(project.get("path", "-")),
        str(project.get("sessions", 0)),
        _text(work.get("branch")),
        _text(work.get("changed") if work.get("gate") else None),
    )


def _seat_cells(row: Row) -> tuple[str, ...]:
    slot = row.get("slot") or {}
    return (
        f"{slot.get('org')}/{slot.get('project')}/{slot.get('label')}",
        _text(row.get("lifecycle")),
        _when(row.get("last_active_ms")),
        _text(row.get("failed")),
    )


def _worker_cells(row: Row) -> tuple[str, ...]:
    return (
        _text(row.get("name")),
        _text(row.get("kind")),
        _text(row.get("pid")),
        _text(row.get("state")),
        _text(row.get("restarts")),
        _text(row.get("last_exit")),
        _text(row.get("last_reason")),
    )


def _text(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)


def _when(epoch_ms: Any) -> str:
    if not isinstance(epoch_ms, int):
        return "-"
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
