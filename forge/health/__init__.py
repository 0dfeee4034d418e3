"""Forge health: one classified availability signal read from real gh calls, plus the read cache
and the durable write queue that ride the same gh PATH shim.

Consumers ask `is_trustworthy()` before believing an empty gh result; `status()` gives the verdict
with its evidence; `classify()` is the pure rule. Heavier pieces (cache, queue, replay) live in
their own modules and are imported only by the paths that need them.
"""

from __future__ import annotations

from forge.health.engine import is_trustworthy, status
from forge.health.verdict import classify

__all__ = ["classify", "is_trustworthy", "status"]
