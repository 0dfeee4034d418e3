"""The `usage` subject's pool: tokens and cost per seat, project and model, from the CLI's own
result messages (free of I/O).

Each turn's `Result` carries what every model it used spent (`model_usage`, the CLI's own cost
figure); the book keeps one entry per turn and model and sums them into the subject's four
windows on each read: `today` (since midnight UTC), `week` and `month` (the last 7 and 30 days)
and `lifetime` (every entry kept, across supervisor restarts: `ledger` keeps them on disk).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from forge.wire.seats import Seat
from forge.workers.agent import protocol as worker

DAY_MS = 24 * 60 * 60 * 1000
WINDOWS: dict[str, Callable[[int], int]] = {
    "today": lambda now: now - now % DAY_MS,
    "week": lambda now: now - 7 * DAY_MS,
    "month": lambda now: now - 30 * DAY_MS,
    "lifetime": lambda now: 0,
}
"""Each window's first millisecond, given now."""

_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


class Spend(msgspec.Struct, frozen=True, kw_only=True):
    """What one model spent in one turn of one seat."""

    at_ms: int
    key: Seat
    model: str
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    cost_usd: float


def spends_of(result: worker.Result, key: Seat, at_ms: int) -> list[Spend]:
    """The entries one turn's result adds (one per model it used)."""
    return [
        Spend(
            at_ms=at_ms,
            key=key,
            model=model,
            input_tokens=used.input_tokens,
            output_tokens=used.output_tokens,
            cache_creation_input_tokens=used.cache_creation_input_tokens,
            cache_read_input_tokens=used.cache_read_input_tokens,
            cost_usd=used.cost_usd,
        )
        for model, used in sorted(result.model_usage.items())
    ]


def snapshot(spends: Iterable[Spend], now_ms: int) -> dict[str, Any]:
    """The `usage` subject: each window's rows by model, project and seat, and its total."""
    kept = list(spends)
    data: dict[str, Any] = {
        name: _window([s for s in kept if s.at_ms >= start(now_ms)])
        for name, start in WINDOWS.items()
    }
    data["pricing_available"] = False
    return data


def _window(spends: list[Spend]) -> dict[str, Any]:
    by_model: dict[str, dict[str, Any]] = {}
    by_project: dict[tuple[str, str], dict[str, Any]] = {}
    by_seat: dict[Seat, dict[str, Any]] = {}
    total: dict[str, Any] | None = None
    for spend in spends:
        project = (spend.key.org, spend.key.project)
        rows = (
            by_model.setdefault(spend.model, {"model": spend.model, **_zero()}),
            by_project.setdefault(
                project, {"project": {"org": project[0], "name": project[1]}, **_zero()}
            ),
            by_seat.setdefault(spend.key, {"key": spend.key, **_zero()}),
        )
        total = total or _zero()
        for row in (*rows, total):
            _add(row, spend)
    return {
        "by_model": list(by_model.values()),
        "by_project": list(by_project.values()),
        "by_seat": list(by_seat.values()),
        "total": total,
    }


def _zero() -> dict[str, Any]:
    return {**dict.fromkeys(_COUNTS, 0), "cost_usd": 0.0, "entries": 0}


def _add(row: dict[str, Any], spend: Spend) -> None:
    for name in _COUNTS:
        row[name] += getattr(spend, name)
    row["cost_usd"] += spend.cost_usd
    row["entries"] += 1
