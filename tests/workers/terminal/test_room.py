"""Roles and sizes of one terminal's viewers, without processes."""

from __future__ import annotations

from forge.supervisor.terminal.room import TerminalRoom
from forge.wire.seats import Seat

SEAT = Seat("acme", "forge", "main")


def test_a_take_always_lands_and_only_the_holder_releases() -> None:
    room: TerminalRoom[str] = TerminalRoom(1, SEAT)
    alice, bob = room.attach("a", 1), room.attach("b", 2)
    assert room.may_type(alice)
    assert room.may_type(bob)
    assert room.take(alice)
    assert not room.take(alice)
    assert not room.may_type(bob)
    assert room.take(bob)
    assert room.controller is bob
    assert not room.release(alice)
    assert room.controller is bob
    assert room.release(bob)
    assert room.controller is None


def test_detaching_the_controller_releases_control() -> None:
    room: TerminalRoom[str] = TerminalRoom(1, SEAT)
    alice = room.attach("a", 1)
    room.take(alice)
    assert room.detach("a") == (alice, True)
    assert room.controller is None
    assert room.detach("a") == (None, False)


def test_size_is_the_controllers_else_the_longest_watching_viewers() -> None:
    room: TerminalRoom[str] = TerminalRoom(1, SEAT)
    first, second = room.attach("a", 1), room.attach("b", 2)
    assert room.wanted_size() is None
    second.size = (100, 30)
    assert room.wanted_size() == (100, 30)
    first.size = (80, 24)
    assert room.wanted_size() == (80, 24)
    room.take(second)
    assert room.wanted_size() == (100, 30)
    room.detach("b")
    assert room.wanted_size() == (80, 24)
