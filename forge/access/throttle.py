"""Slowing a peer whose upgrades keep failing the token check: a pure rule, times passed in.

After a peer's n-th failure in a row, its next attempt is not answered before
`first_s * 2**(n-1)` (capped at `cap_s`) has passed since that failure; a peer that waits that
long pays nothing. A success, or `forget_s` without a failure, clears the peer. There is no
lockout: the owner who mistyped waits at most `cap_s`. Peers are IP addresses (ports change on
every dial); the table is bounded, the stalest entries going first.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    first_s: float = 0.25
    cap_s: float = 4.0
    forget_s: float = 600.0
    peers: int = 4096
    """Peers remembered at most; a token guesser cannot grow the table without bound."""


@dataclass(slots=True)
class _Strikes:
    count: int
    last: float


class Throttle:
    """Failures per peer, and how long the next attempt from each must wait."""

    def __init__(self, backoff: Backoff = Backoff()) -> None:
        self.backoff = backoff
        self._strikes: dict[str, _Strikes] = {}

    def wait(self, peer: str, now: float) -> float:
        """Seconds an attempt from `peer` arriving at `now` waits before it is answered."""
        strikes = self._live(peer, now)
        if strikes is None:
            return 0.0
        delay = min(self.backoff.first_s * 2.0 ** (strikes.count - 1), self.backoff.cap_s)
        return max(0.0, strikes.last + delay - now)

    def failed(self, peer: str, now: float) -> None:
        strikes = self._live(peer, now)
        if strikes is None:
            self._strikes[peer] = _Strikes(1, now)
            self._bound(now)
        else:
            strikes.count += 1
            strikes.last = now

    def succeeded(self, peer: str) -> None:
        self._strikes.pop(peer, None)

    def strikes(self, peer: str, now: float) -> int:
        """Failures in a row that still count against `peer`."""
        strikes = self._live(peer, now)
        return 0 if strikes is None else strikes.count

    def _live(self, peer: str, now: float) -> _Strikes | None:
        strikes = self._strikes.get(peer)
        if strikes is not None and now - strikes.last >= self.backoff.forget_s:
            del self._strikes[peer]
            return None
        return strikes

    def _bound(self, now: float) -> None:
        if len(self._strikes) <= self.backoff.peers:
            return
        for peer in [p for p, s in self._strikes.items() if now - s.last >= self.backoff.forget_s]:
            del self._strikes[peer]
        while len(self._strikes) > self.backoff.peers:
            del self._strikes[min(self._strikes, key=lambda p: self._strikes[p].last)]
