"""Who holds which subject, and the seats whose finished turn nobody has seen yet (S11, H04).

A connection holds a subject from its `subscribe` until its last `unsubscribe` of it (counted)
or its teardown. Features hear when a subject gains its first holder and loses its last
(`on_held`): work done only for held subjects (a seat's process walk, a tree's watch) starts and
stops there; and each time a connection starts or stops holding it (`on_holders`: an agent
seat's asks are answerable only while an answering connection holds it). A seat's unseen mark
is spent by a connection that shows the seat and holds its session.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from forge.logs import get_logger
from forge.supervisor.socket.connection import Connection
from forge.wire.seats import Seat, Subject, session

log = get_logger(__name__)

HeldHook = Callable[[Subject, bool], None]
HoldersHook = Callable[[Subject], None]


class Holders:
    """The connections holding each subject, the hooks told of first and last holders, and the
    unseen marks."""

    def __init__(self) -> None:
        self._subscribers: defaultdict[Subject, set[Connection]] = defaultdict(set)
        self._held_hooks: list[HeldHook] = []
        self._holders_hooks: list[HoldersHook] = []
        self._unseen: dict[Seat, None] = {}

    def on_held(self, hook: HeldHook) -> None:
        self._held_hooks.append(hook)

    def on_holders(self, hook: HoldersHook) -> None:
        self._holders_hooks.append(hook)

    def hold(self, connection: Connection, subject: Subject) -> bool:
        """Count one more hold of `subject` by `connection`; True when it is the subject's first
        holder (the caller tells the hooks once its snapshot is sent)."""
        first = subject not in self._subscribers
        connection.subscriptions[subject] += 1
        self._subscribers[subject].add(connection)
        return first

    def release(self, connection: Connection, subject: Subject) -> None:
        """One `unsubscribe`: the connection stops holding the subject at its last one."""
        count = connection.subscriptions[subject]
        if count <= 1:
            connection.subscriptions.pop(subject, None)
            self._unindex(subject, connection)
        else:
            connection.subscriptions[subject] = count - 1

    def drop(self, connection: Connection) -> None:
        """The connection's teardown: it holds nothing any more."""
        for subject in connection.subscriptions:
            self._unindex(subject, connection)
        connection.subscriptions.clear()

    def of(self, subjects: Iterable[Subject]) -> set[Connection]:
        """The connections holding any of `subjects`."""
        holders: set[Connection] = set()
        for subject in subjects:
            holders |= self._subscribers.get(subject, set())
        return holders

    def subscribers(self, subject: Subject) -> set[Connection]:
        """The connections holding `subject` now (a copy)."""
        return set(self._subscribers.get(subject, ()))

    def is_held(self, seat: Seat) -> bool:
        return bool(self._subscribers.get(session(seat)))

    def tell_held(self, subject: Subject, held: bool) -> None:
        for hook in self._held_hooks:
            try:
                hook(subject, held)
            except Exception:
                log.exception("socket_held_hook_failed", subject=str(subject), held=held)

    def tell_holders(self, subject: Subject) -> None:
        """A connection started or stopped holding `subject`."""
        for hook in self._holders_hooks:
            try:
                hook(subject)
            except Exception:
                log.exception("socket_holders_hook_failed", subject=str(subject))

    def _unindex(self, subject: Subject, connection: Connection) -> None:
        holders = self._subscribers.get(subject)
        if holders is not None:
            holders.discard(connection)
            if not holders:
                del self._subscribers[subject]
                self.tell_held(subject, False)
            self.tell_holders(subject)

    # --- unseen marks (S11, H04) ------------------------------------------------------------

    @property
    def unseen(self) -> list[Seat]:
        return list(self._unseen)

    def mark(self, seat: Seat) -> None:
        self._unseen[seat] = None

    def spend_marks(self) -> bool:
        """S11: a mark is spent by a connection that shows the seat and holds its session; True
        when one was."""
        spent = [
            seat
            for seat in self._unseen
            if any(
                c.showing == seat and c.subscriptions[session(seat)] > 0
                for c in self.of([session(seat)])
            )
        ]
        for seat in spent:
            del self._unseen[seat]
            log.info("seat_mark_spent", seat=str(seat))
        return bool(spent)
