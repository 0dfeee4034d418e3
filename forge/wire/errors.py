"""Refusals a client is told about, as `error{what, why, seat, dispatch_id}` carries them."""

from __future__ import annotations

from forge.errors import PeerError
from forge.wire.seats import Seat


class ClientRefusal(PeerError):
    """A refused client message: `what` names the verb (or `client_message`), `why` says why.

    The connection stays up; the supervisor answers with a `server.Error` built from this.
    """

    def __init__(self, what: str, why: str, seat: Seat | None = None) -> None:
        super().__init__(f"{what}: {why}")
        self.what = what
        self.why = why
        self.seat = seat
