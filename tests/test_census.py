"""The census counts what lives by type and finds what grew between two counts."""

from __future__ import annotations

import gc
from collections import Counter

from forge.census import grown, holders, largest_containers, live_objects


class Kept:
    """A type only this test makes."""


def test_a_census_counts_live_instances_of_a_type() -> None:
    name = f"{__name__}.Kept"
    before = live_objects()
    kept = [Kept() for _ in range(250)]
    after = live_objects()
    assert after[name] - before.get(name, 0) == 250
    assert (name, before.get(name, 0), after[name]) in grown(before, after, top=len(after))
    assert len(kept) == 250


def test_grown_orders_by_rise_and_leaves_out_what_shrank_or_stayed() -> None:
    before = Counter({"a": 10, "b": 5, "c": 7, "d": 3})
    after = Counter({"a": 12, "b": 50, "c": 7, "d": 1, "e": 4})
    assert grown(before, after, top=10) == [("b", 5, 50), ("e", 0, 4), ("a", 10, 12)]
    assert grown(before, after, top=1) == [("b", 5, 50)]


def test_the_longest_containers_are_named_with_a_glimpse_of_an_entry() -> None:
    held = {f"key-{n}": Kept() for n in range(300_000)}
    [(kind, length, glimpse), *_] = largest_containers(top=3)
    assert (kind, length) == ("builtins.dict", 300_000)
    assert glimpse == f"'key-0': {__name__}.Kept"
    assert len(held) == 300_000


def test_looking_for_the_largest_leaves_nothing_behind_for_the_collector() -> None:
    """Each look once left its own list of every container in a cycle with itself: a census a
    minute grew the heap by a tuple per container until a full collection came."""
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        largest_containers(top=3)
        left = len(gc.get_objects()) - before
    finally:
        gc.enable()
    assert left < 100, left


class Deep:
    """Stands for what lies too deep to be drawn: a repr that reached it would take long."""

    def __repr__(self) -> str:
        raise AssertionError("the glimpse drew an entry's whole depth")


def test_a_glimpse_draws_an_entry_only_a_few_levels_deep() -> None:
    held = [[[[Deep()]]], *range(400_000)]
    [(_, length, glimpse), *_] = largest_containers(top=1)
    assert length == len(held)
    assert glimpse.startswith("[[")


class Registered:
    """A type only the holders test makes."""


class Registry:
    def __init__(self) -> None:
        self.entries: dict[str, list[Registered]] = {"forgotten": [Registered()]}


def test_holders_follow_what_keeps_an_object_alive_outward() -> None:
    registry = Registry()
    chains = holders([f"{__name__}.Registered", f"{__name__}.Registry", "no.such.Type"], depth=3)
    chain = chains[f"{__name__}.Registered"]
    assert chain[:2] == ["builtins.list", "builtins.dict['forgotten']"]
    assert chain[2] in {f"{__name__}.Registry", "builtins.dict['entries']"}
    assert chains[f"{__name__}.Registry"] == []  # held by this test's frame alone
    assert chains["no.such.Type"] == []
    assert registry.entries
