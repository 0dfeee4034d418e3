"""What a long-running process holds, counted by type: the first question when its memory grows.

`live_objects` walks every object the cyclic garbage collector tracks (containers: instances,
dicts, lists, tuples, sets, coroutines; not strings or bytes) and counts them by type; `grown`
compares two counts; `largest_containers` names the longest containers, where a growing count
of strings or bytes would sit; `holders` follows what keeps one object of a type alive, outward.
Each walk visits every tracked object once, so it runs only when
asked: `forge supervise` takes a census on SIGUSR1 (after a full garbage collection, so cycles
waiting for one are not counted as living) and logs it.
"""

from __future__ import annotations

import gc
import reprlib
from collections import Counter, deque
from collections.abc import Collection
from types import FrameType


def live_objects() -> Counter[str]:
    """Tracked objects by `module.qualname` of their type, now."""
    counts: Counter[str] = Counter()
    for thing in gc.get_objects():
        counts[_kind(thing)] += 1
    return counts


def largest_containers(top: int) -> list[tuple[str, int, str]]:
    """The `top` longest dicts, lists, sets and deques alive: (type, length, a glimpse of one
    entry). A container that grows without bound keeps its count of one, so the census by type
    cannot show it; its length does."""
    things = gc.get_objects()  # taken before `sized` exists, so that list never counts itself
    sized = [(len(thing), thing) for thing in things if isinstance(thing, (dict, list, set, deque))]
    sized.sort(key=lambda entry: -entry[0])
    return [(_kind(thing), length, _glimpse(thing)) for length, thing in sized[:top]]


def _kind(thing: object) -> str:
    kind = type(thing)
    return f"{kind.__module__}.{kind.__qualname__}"


_SHORT = reprlib.Repr()
"""An entry's repr bounded as it is made: a full repr of a nested container can take seconds."""
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother = 2, 60, 60


def _glimpse(container: object) -> str:
    """One entry, short: a key and its value's type for a mapping, the first item otherwise."""
    try:
        if isinstance(container, dict):
            key, value = next(iter(container.items()))
            return f"{_SHORT.repr(key):.60}: {_kind(value)}"
        return f"{_SHORT.repr(next(iter(container))):.80}"  # type: ignore[call-overload]
    except (StopIteration, RuntimeError):
        return ""


def grown(before: Counter[str], after: Counter[str], top: int) -> list[tuple[str, int, int]]:
    """The `top` types whose count rose most from `before` to `after`: (type, before, after)."""
    rises = [(kind, before.get(kind, 0), count) for kind, count in after.items()]
    rises = [rise for rise in rises if rise[2] > rise[1]]
    rises.sort(key=lambda rise: (rise[1] - rise[2], rise[0]))
    return rises[:top]


def holders(kinds: Collection[str], depth: int = 4) -> dict[str, list[str]]:
    """What keeps one live object of each of `kinds` alive, outward `depth` steps: each step's
    holder, named by type (and, for a dict, the key it holds it under). A type that grows is
    usually held by one container or one forgotten reference, which its count alone cannot
    name. One scan finds an object of every kind, and each step asks for the referrers of all
    of them at once: a step costs one walk of every tracked object, however many kinds."""
    things = gc.get_objects()
    held: dict[str, object] = {}
    for thing in reversed(things):
        kind = _kind(thing)
        if kind in kinds and kind not in held:
            held[kind] = thing
            if len(held) == len(kinds):
                break
    del things
    chains: dict[str, list[str]] = {kind: [] for kind in kinds}
    for _ in range(depth):
        targets = list(held.values())
        if not targets:
            break
        referrers = gc.get_referrers(*targets)
        ours = {id(targets), id(held)}
        for kind, thing in list(held.items()):
            holder = next((r for r in referrers if id(r) not in ours and _holds(r, thing)), None)
            if holder is None:
                del held[kind]
                continue
            chains[kind].append(_kind(holder) + _key_of(holder, thing))
            held[kind] = holder
        del referrers, targets
    return chains


def _holds(holder: object, held: object) -> bool:
    """Whether `holder` refers to `held` directly (frames, the census's own, are not holders)."""
    return not isinstance(holder, FrameType) and any(
        referent is held for referent in gc.get_referents(holder)
    )


def _key_of(holder: object, held: object) -> str:
    """`[key]` when `holder` is a dict holding `held` as a value (an instance's `__dict__` too)."""
    if isinstance(holder, dict):
        for key, value in holder.items():
            if value is held:
                return f"[{_SHORT.repr(key):.40}]"
    return ""
