"""The run's history: what happened to the run as a whole, for the report to list.

The scheduler appends one JSON line per event to `<out>/history.jsonl` as it happens: each
invocation's start (a resume among them), each attempt a resume cleared (a directory with no
record) or moved aside (a provider-unavailable record, with its cost), each in-flight attempt
discarded (interrupted, aborted, lost with its runner or Dask worker), and the invocation's end
(its status and abort reason). An invocation with no `ended` line was killed outright. Reading
the lines back into the report's words is pure (`entries`, `lines`).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

HISTORY_FILE = "history.jsonl"


@dataclass(frozen=True)
class Entry:
    """One event as report.json lists it: what, and its details in words."""

    event: str
    text: str


def parse(raw: str) -> list[dict[str, Any]]:
    """The history file's events; a line cut short by a crash is skipped."""
    events = []
    for line in raw.splitlines():
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if isinstance(event, dict) and isinstance(event.get("event"), str):
                events.append(event)
    return events


def entries(events: list[dict[str, Any]]) -> list[Entry]:
    """The events in words, with an invocation that never said it ended marked as killed."""
    out: list[Entry] = []
    open_invocation = False
    for event in events:
        kind = event["event"]
        if kind == "started" and open_invocation:
            out.append(Entry("killed", "the invocation before ended without a word (killed)"))
        if kind == "started":
            open_invocation = True
        elif kind == "ended":
            open_invocation = False
        out.append(Entry(kind, _words(event)))
    return out


def _words(event: dict[str, Any]) -> str:
    kind = event["event"]
    at = str(event.get("at", "?"))
    attempt = str(event.get("attempt", "?"))
    if kind == "started":
        how = "resumed" if event.get("resume") else "started"
        return f"{at}: run {how} (--parallel {event.get('parallel', 1)})"
    if kind == "cleared":
        return f"{at}: {attempt} had no record (cut short before); its folder was removed"
    if kind == "superseded":
        return (
            f"{at}: {attempt} recorded provider-unavailable, moved to superseded/ and run again "
            f"(it cost {_cost(event.get('costUsd'))})"
        )
    if kind == "discarded":
        return (
            f"{at}: {attempt} discarded ({event.get('why', '?')}); cost unknown (it never reported)"
        )
    if kind == "ended":
        text = f"{at}: run ended {event.get('status', '?')}"
        return text + (f": {event['reason']}" if event.get("reason") else "")
    return f"{at}: {kind}"


def _cost(value: object) -> str:
    return f"${value:.4f}" if isinstance(value, int | float) else "n/a"


def summary(events: list[dict[str, Any]]) -> dict[str, Any]:
    """report.json's `history`: counts, the cost of what was thrown away, and every line."""
    listed = entries(events)
    return {
        "invocations": sum(1 for e in events if e["event"] == "started"),
        "resumes": sum(1 for e in events if e["event"] == "started" and e.get("resume")),
        "interruptions": sum(1 for e in listed if e.event == "killed")
        + sum(1 for e in events if e["event"] == "ended" and _interrupted(e)),
        "discarded": sum(1 for e in events if e["event"] in ("discarded", "cleared")),
        "superseded": sum(1 for e in events if e["event"] == "superseded"),
        "supersededCostUsd": round(
            sum(
                e["costUsd"]
                for e in events
                if e["event"] == "superseded" and isinstance(e.get("costUsd"), int | float)
            ),
            6,
        ),
        "events": [{"event": e.event, "text": e.text} for e in listed],
    }


def _interrupted(ended: dict[str, Any]) -> bool:
    """An invocation ended by a signal, a lost runner or worker, or a lost supervisor."""
    return ended.get("status") == "aborted"


def lines(history: dict[str, Any]) -> list[str]:
    """report.md's `## History` items."""
    return [f"- {e['text']}" for e in history["events"]] or ["- none"]
