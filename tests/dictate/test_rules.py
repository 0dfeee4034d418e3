"""The take and voice rules of the socket as tables (forge/supervisor/voice/rules.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from forge.supervisor.voice.rules import Note, TakeBook, VoiceChange, VoiceRoom
from forge.wire.seats import Seat

A = Seat("acme", "proj", "a")
B = Seat("acme", "proj", "b")


@dataclass(frozen=True)
class Take:
    id: int
    owner: str
    seat: Seat


def test_one_take_per_connection_and_per_seat() -> None:
    book: TakeBook[Take] = TakeBook()
    first = Take(1, "phone", A)
    book.add(first)
    assert "this connection already has a live take" in str(book.refusal("phone", B))
    assert "seat acme/proj/a already has a live take" in str(book.refusal("desk", A))
    assert book.refusal("desk", B) is None
    with pytest.raises(ValueError, match="already has a live take"):
        book.add(Take(2, "desk", A))
    assert book.of("phone") is first
    assert book.get(1) is first
    assert book.remove(first) is True
    assert book.remove(first) is False  # an end and a drop cannot both land
    assert book.refusal("desk", A) is None
    assert len(book) == 0


def test_listeners_count_connections_and_the_agent_hears_first_in_and_last_out() -> None:
    room: VoiceRoom[str] = VoiceRoom()
    assert room.turn(A, "phone", True) == VoiceChange(A, 1, Note.LISTENING)
    assert room.turn(A, "phone", True) == VoiceChange(A, 1, None)  # a second on is one listener
    assert room.turn(A, "desk", True) == VoiceChange(A, 2, None)
    assert room.turn(A, "desk", False) == VoiceChange(A, 1, None)
    assert room.turn(A, "phone", False) == VoiceChange(A, 0, Note.STOPPED)
    assert room.members(A) == set()


def test_moving_away_pauses_without_telling_and_a_return_does_not_tell_again() -> None:
    room: VoiceRoom[str] = VoiceRoom()
    room.turn(A, "phone", True)
    assert room.turn(A, "phone", False, explicit=False) == VoiceChange(A, 0, None)
    assert room.turn(A, "phone", True, explicit=False) == VoiceChange(A, 1, None)


def test_a_closed_connection_leaves_every_seat_and_takes_the_note_back() -> None:
    room: VoiceRoom[str] = VoiceRoom()
    room.turn(A, "phone", True)
    room.turn(B, "phone", True)
    room.turn(B, "desk", True)
    changes = sorted(room.leave("phone"), key=lambda change: change.seat.label)
    assert changes == [VoiceChange(A, 0, Note.STOPPED), VoiceChange(B, 1, None)]
    room.turn(B, "desk", False, explicit=False)
    assert room.leave("desk") == [VoiceChange(B, 0, Note.STOPPED)]
    assert room.leave("nobody") == []
