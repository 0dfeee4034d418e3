"""The home subject's `service_status`: the verdict as the supervisor publishes it.

Read with --no-probe semantics: the supervisor never probes, so it can poll this as often as it
likes without spending calls; evidence comes from the gh calls that actually happen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forge.clock import Clock
from forge.health.engine import StatusRequest, report
from forge.health.settings import Settings, clock_from_env


def service_status(
    env: Mapping[str, str] | None = None, clock: Clock | None = None
) -> dict[str, Any]:
    """`{state, reason, sample, cache, queue}`; the queue block covers every project with
    something pending (the replay breadcrumb), since the supervisor has no project of its own."""
    settings = Settings.from_env(env)
    full = report(settings, clock or clock_from_env(env), StatusRequest(probe=False), None)
    return {key: full[key] for key in ("state", "reason", "sample", "cache", "queue")}


def home_service_status(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Home's `service_status`: null when there is nothing to tell the
    person. A verdict is news when the forge is degraded or unreachable, or writes wait in (or
    were set aside from, or lie corrupt or untrusted in) the queue; operational and unknown (no
    evidence yet) with an empty queue are null."""
    queue = status.get("queue") or {}
    refused = ("pending", "set_aside", "corrupt", "untrusted")
    quiet_queue = not any(queue.get(key) for key in refused)
    if status.get("state") in ("operational", "unknown") and quiet_queue:
        return None
    return status
