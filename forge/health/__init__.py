"""Forge health: one classified availability signal read from real gh calls, plus the read cache
and the durable write queue that ride the same gh PATH shim.

Consumers ask `is_trustworthy()` before believing an empty gh result; `status()` gives the verdict
with its evidence; `classify()` is the pure rule. They are imported on first use, so the shim's
Python paths (cache serve, spool) do not pay for the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forge.health.engine import is_trustworthy, status
    from forge.health.verdict import classify

__all__ = ["classify", "is_trustworthy", "status"]


def __getattr__(name: str) -> Any:
    if name in ("is_trustworthy", "status"):
        from forge.health import engine

        return getattr(engine, name)
    if name == "classify":
        from forge.health import verdict

        return verdict.classify
    raise AttributeError(f"module 'forge.health' has no attribute {name!r}")
