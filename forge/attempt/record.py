"""The attempt record (`attempt.json`): what an attempt found, written once it has finished."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


def cost_basis(bases: Iterable[str | None]) -> str | None:
    """One label for the bases behind a total: `reported`, `list-price-estimate`, `mixed (...)`."""
    counts = Counter(b or "unspecified" for b in bases)
    if not counts:
        return None
    if len(counts) == 1:
        return next(iter(counts))
    return "mixed (" + ", ".join(f"{n} {basis}" for basis, n in sorted(counts.items())) + ")"
