"""The harness contract, pure: what the coding atom is given and what its stdout must say.

The atom prints one JSON object: `{schemaVersion: "v1", outcome, usage: {costUsd, model,
costBasis}, terminalReason, error}`. Anything else is a failed attempt. Transient provider errors
are recognised from `terminalReason`/`error`/`apiErrorStatus` by `is_transient`'s rules.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from forge.attempt.plan import Issue

OUTCOMES = ("completed", "failed", "blocked", "no-change", "scope-change")
RESUME_INSTRUCTION = (
    "The previous attempt was interrupted by a provider network error; the workspace contains "
    "its partial work. Review it and complete every acceptance item. If the retained work "
    "already satisfies every acceptance item, report outcome completed, not no-change."
)
NETWORK_MARKERS = (
    "ENOTFOUND",
    "ECONNRESET",
    "ECONNREFUSED",
    "ETIMEDOUT",
    "EAI_AGAIN",
    "socket hang up",
    "Connection error.",
    "Request timed out.",
    "Can't reach the API server",
    "went to sleep mid-response",
)
NEVER_TRANSIENT = ("invalid_request_error", "authentication_error", "permission_error")
TRANSIENT_STATUSES = (502, 503, 504, 529)
_API_STATUS_RE = re.compile(r"API Error: (\d{3})\b")


@dataclass(frozen=True)
class HarnessReport:
    outcome: str
    cost_usd: float | None
    model: str | None
    cost_basis: str | None
    model_mismatch: bool
    terminal_reason: str | None
    error: str | None
    api_error_status: int | None


def task_input(
    issue: Issue, allowed_files: tuple[str, ...], model: str, instructions: list[str]
) -> bytes:
    """The bytes on the harness's stdin and in `FORGE_TASK_FILE` (acceptance table O-24)."""
    document = {
        "schemaVersion": "v1",
        "title": issue.title,
        "body": issue.body,
        "allowedFiles": list(allowed_files),
        "model": model,
        "instructions": instructions,
    }
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def parse_report(stdout: bytes) -> HarnessReport | None:
    """The harness's report, or None when stdout is not exactly one valid v1 object."""
    try:
        value = json.loads(stdout.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(value, dict) or value.get("schemaVersion") != "v1":
        return None
    outcome = value.get("outcome")
    if outcome not in OUTCOMES:
        return None
    usage = value.get("usage") or {}
    if not isinstance(usage, dict):
        return None
    status = value.get("apiErrorStatus")
    return HarnessReport(
        outcome=outcome,
        cost_usd=_cost(usage.get("costUsd")),
        model=_text(usage.get("model")),
        cost_basis=_text(usage.get("costBasis")),
        model_mismatch=usage.get("modelMismatch") is True,
        terminal_reason=_text(value.get("terminalReason")),
        error=_text(value.get("error")),
        api_error_status=status
        if isinstance(status, int) and not isinstance(status, bool)
        else None,
    )


def served_model_mismatch(report: HarnessReport, pinned: str) -> bool:
    """O-14: a non-empty served model other than the pin, or the harness saying so."""
    return report.model_mismatch or (bool(report.model) and report.model != pinned)


def is_transient(report: HarnessReport) -> bool:
    """A transient provider error, worth a wait and a resume: a network-class API error,
    overloaded, or HTTP 502/503/504/529."""
    if report.outcome == "completed":
        return False
    error = report.error or ""
    if any(kind in error for kind in NEVER_TRANSIENT):
        return False
    status = report.api_error_status
    if status is None:
        match = _API_STATUS_RE.search(error)
        status = int(match.group(1)) if match else None
    if status is not None:
        return status in TRANSIENT_STATUSES
    if "overloaded_error" in error or "Overloaded" in error:
        return True
    return report.terminal_reason == "api_error" and any(m in error for m in NETWORK_MARKERS)


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _cost(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
