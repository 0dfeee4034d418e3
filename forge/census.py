"""What a long-running process holds, counted by type: the first question when its memory grows.

`live_objects` walks every object the cyclic garbage collector tracks (containers: instances,
dicts, lists, tuples, sets, coroutines; not strings or bytes) and counts them by type; `grown`
compares two counts. The walk visits each object once (~0.1 s for a supervisor's ~300,000), so
it runs only when asked: `forge supervise` takes a census on SIGUSR1 and logs it.
"""

from __future__ import annotations

import gc
from collections import Counter


def live_objects() -> Counter[str]:
    """Tracked objects by `module.qualname` of their type, now."""
    counts: Counter[str] = Counter()
    for thing in gc.get_objects():
        kind = type(thing)
        counts[f"{kind.__module__}.{kind.__qualname__}"] += 1
    return counts


def grown(before: Counter[str], after: Counter[str], top: int) -> list[tuple[str, int, int]]:
    """The `top` types whose count rose most from `before` to `after`: (type, before, after)."""
    rises = [(kind, before.get(kind, 0), count) for kind, count in after.items()]
    rises = [rise for rise in rises if rise[2] > rise[1]]
    rises.sort(key=lambda rise: (rise[1] - rise[2], rise[0]))
    return rises[:top]
