"""The take and voice rules of the socket, pure: who may start a take, who listens, what the
agent is told. `service` does the I/O around them.

Takes (`TakeBook`): one take per connection and one live take per seat; a second
`dictate_stream` is refused in a sentence. Voice (`VoiceRoom`): each seat's listeners are the
connections whose switch is on; the first one in puts a note to the agent (the person is
listening), and the last one out takes it back when the off is explicit or the connection went
away. An off with `explicit: false` (the client moved to another seat and keeps its intent)
pauses the seat without a note, and that connection closing later still takes it back.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, Protocol, TypeVar

from forge.wire.seats import Seat


class TakeLike(Protocol):
    @property
    def id(self) -> int: ...
    @property
    def owner(self) -> Hashable: ...
    @property
    def seat(self) -> Seat: ...


T = TypeVar("T", bound=TakeLike)
L = TypeVar("L", bound=Hashable)


class TakeBook(Generic[T]):
    """The live takes, by id, by the connection that owns each and by seat."""

    def __init__(self) -> None:
        self._by_id: dict[int, T] = {}
        self._by_owner: dict[Hashable, T] = {}
        self._by_seat: dict[Seat, T] = {}

    def refusal(self, owner: Hashable, seat: Seat) -> str | None:
        """Why `owner` may not start a take on `seat` now, or None."""
        mine = self._by_owner.get(owner)
        if mine is not None:
            return (
                f"this connection already has a live take (seat {mine.seat}); "
                "send dictate_stop or dictate_cancel and wait for its end first"
            )
        if seat in self._by_seat:
            return f"seat {seat} already has a live take on another connection: one at a time"
        return None

    def add(self, take: T) -> None:
        why = self.refusal(take.owner, take.seat)
        if why is not None:
            raise ValueError(why)
        self._by_id[take.id] = take
        self._by_owner[take.owner] = take
        self._by_seat[take.seat] = take

    def remove(self, take: T) -> bool:
        """Forget `take`; False when it was not live (already ended, dropped or failed)."""
        if self._by_id.get(take.id) is not take:
            return False
        del self._by_id[take.id]
        del self._by_owner[take.owner]
        del self._by_seat[take.seat]
        return True

    def get(self, take: int) -> T | None:
        return self._by_id.get(take)

    def of(self, owner: Hashable) -> T | None:
        return self._by_owner.get(owner)

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._by_id.values()))

    def __len__(self) -> int:
        return len(self._by_id)


class Note(StrEnum):
    LISTENING = "listening"
    STOPPED = "stopped"


NOTE_TEXT = {
    Note.LISTENING: "[Voice] The person is listening: send each update's substance through "
    "mcp__forge__voice__say, in a live-conversation register.",
    Note.STOPPED: "[Voice] The person stopped listening: you may stop speaking.",
}
"""What an agent seat's agent is sent (as a prompt of source `voice`)."""


@dataclass(frozen=True, slots=True)
class VoiceChange:
    seat: Seat
    listeners: int
    note: Note | None


class VoiceRoom(Generic[L]):
    """Per seat, the connections with voice on, and whether the agent was told someone listens."""

    def __init__(self) -> None:
        self._on: defaultdict[Seat, set[L]] = defaultdict(set)
        self._paused: defaultdict[Seat, set[L]] = defaultdict(set)
        self._told: set[Seat] = set()

    def listeners(self, seat: Seat) -> int:
        return len(self._on.get(seat, ()))

    def members(self, seat: Seat) -> set[L]:
        return set(self._on.get(seat, ()))

    def turn(self, seat: Seat, listener: L, on: bool, explicit: bool = True) -> VoiceChange:
        """One connection's switch for one seat; the seat's count and the note it causes."""
        self._paused[seat].discard(listener)
        if on:
            self._on[seat].add(listener)
            return VoiceChange(seat, self.listeners(seat), self._tell(seat, Note.LISTENING))
        self._on[seat].discard(listener)
        if not explicit:
            self._paused[seat].add(listener)
            return VoiceChange(seat, self.listeners(seat), None)
        return VoiceChange(seat, self.listeners(seat), self._maybe_stopped(seat))

    def leave(self, listener: L) -> list[VoiceChange]:
        """A connection went away: off everywhere it was on (or paused), as an explicit off."""
        changes = []
        for seat in [
            s for s in {*self._on, *self._paused} if listener in self._on[s] | self._paused[s]
        ]:
            self._on[seat].discard(listener)
            self._paused[seat].discard(listener)
            changes.append(VoiceChange(seat, self.listeners(seat), self._maybe_stopped(seat)))
        return changes

    def _tell(self, seat: Seat, note: Note) -> Note | None:
        if seat in self._told:
            return None
        self._told.add(seat)
        return note

    def _maybe_stopped(self, seat: Seat) -> Note | None:
        if self._on[seat] or self._paused[seat] or seat not in self._told:
            return None
        self._told.discard(seat)
        return Note.STOPPED
