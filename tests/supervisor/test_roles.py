"""The roles vocabulary shared by terminals and browser tabs, as tables. Viewers are letters."""

from __future__ import annotations

import pytest

from forge.supervisor.socket.roles import Handover, WhenFree, layout_owner, may_drive, release, take


@pytest.mark.parametrize(
    ("holder", "taker", "after"),
    [
        (None, "a", Handover("a", True)),  # a take with nobody holding lands
        ("a", "b", Handover("b", True)),  # a take always lands; the old holder loses (TM09)
        ("a", "a", Handover("a", False)),  # taking what one holds sends nothing (O-TM7)
    ],
)
def test_a_take_always_lands(holder: str | None, taker: str, after: Handover[str]) -> None:
    assert take(holder, taker) == after


@pytest.mark.parametrize(
    ("holder", "releaser", "after"),
    [
        ("a", "a", Handover(None, True)),  # the holder releases (and a leaving holder)
        ("a", "b", Handover("a", False)),  # not theirs to make (TM09, BR15)
        (None, "a", Handover(None, False)),  # releasing nothing changes nothing
    ],
)
def test_only_the_holder_releases(holder: str | None, releaser: str, after: Handover[str]) -> None:
    assert release(holder, releaser) == after


@pytest.mark.parametrize(
    ("holder", "viewer", "when_free", "lands"),
    [
        ("a", "a", WhenFree.ANYONE, True),
        ("a", "b", WhenFree.ANYONE, False),  # with a controller only its input lands
        (None, "b", WhenFree.ANYONE, True),  # a terminal with none: anyone's (O-TM3)
        ("a", "a", WhenFree.NOBODY, True),
        ("a", "b", WhenFree.NOBODY, False),
        (None, "b", WhenFree.NOBODY, False),  # a tab with none: nobody's (BR13)
    ],
)
def test_who_may_drive(holder: str | None, viewer: str, when_free: WhenFree, lands: bool) -> None:
    assert may_drive(holder, viewer, when_free) is lands


SIZES = {"a": None, "b": (80, 24), "c": (120, 40)}
"""a has sent no size yet."""


@pytest.mark.parametrize(
    ("holder", "viewers", "owner", "sized_owner"),
    [
        ("c", "abc", "c", "c"),  # the controller's size applies (BR08, O-TM4)
        (None, "abc", "a", "b"),  # else the longest-watching viewer's: a tab waits for a's,
        ("a", "abc", "a", "b"),  # a terminal passes over viewers (controller too) with none
        (None, "", None, None),
        (None, "a", "a", None),
    ],
)
def test_the_layout_owner(
    holder: str | None, viewers: str, owner: str | None, sized_owner: str | None
) -> None:
    assert layout_owner(holder, viewers) == owner
    assert layout_owner(holder, viewers, sized=lambda v: SIZES[v] is not None) == sized_owner
