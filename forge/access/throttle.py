"""How a refused token is answered: held by a backoff, or turned away at once; a pure rule.

Only refusals meet this rule: the right token is admitted at once, whatever anyone else sent, so
a stranger's failures can neither lock the owner out nor slow the owner down. Each refusal is a
strike against its peer. The n-th strike in a row is answered (401) after
`min(first_s * 2**(n-1), cap_s)`, and strikes are forgotten `forget_s` after the peer's last
one. At most `held` refusals per peer wait out their delay at once; one more is answered 429 at
once (still a strike), with the seconds until the first held one ends. A hold lasts its delay
whether or not its caller stays, so closing a connection early frees nothing. Peers are IPv4
addresses or IPv6 /64 networks (ports change on every dial; one IPv6 host has a /64 to dial
from); the table is bounded, the stalest peers going first.

What this bounds is what refusals cost: per peer, `held` waiting answers and at most `held`
answered 401s per `cap_s` once the strikes reach the cap. It cannot bound how fast a guesser
learns that a guess was wrong: the right token would have been admitted at once, so no 101 at
once already says "wrong". Holding every token instead would let a stranger who shares the
owner's address (a NAT, a reverse proxy on loopback) shut the owner out. The token's 256 bits
are what make guessing hopeless at any rate.
"""

from __future__ import annotations

import ipaddress
import math
from collections import deque
from dataclasses import dataclass, field

from forge.errors import InternalError

IPV6_NETWORK = 64
"""An IPv6 peer is its /64: one host is usually handed a whole /64 to pick addresses from."""


@dataclass(frozen=True, slots=True)
class Backoff:
    first_s: float = 0.25
    cap_s: float = 4.0
    forget_s: float = 600.0
    held: int = 4
    """Refusals per peer waiting out their delay at once; one more is answered 429 at once."""
    peers: int = 4096
    """Peers remembered at most; a token guesser cannot grow the table without bound."""

    def __post_init__(self) -> None:
        if not 0 < self.first_s <= self.cap_s < self.forget_s or self.held < 1 or self.peers < 1:
            raise InternalError(
                f"{self} needs 0 < first_s <= cap_s < forget_s, and held and peers of 1 or more"
            )

    def delay(self, strikes: int) -> float:
        """Seconds the refusal that makes the `strikes`-th strike in a row (1 or more) is held.
        The exponent stops where the cap is reached, so no count, however large, overflows."""
        doublings = math.ceil(math.log2(self.cap_s / self.first_s))
        return min(self.first_s * 2.0 ** min(strikes - 1, doublings), self.cap_s)


@dataclass(frozen=True, slots=True)
class Hold:
    """Answer 401 after `wait_s`."""

    strikes: int
    wait_s: float


@dataclass(frozen=True, slots=True)
class Shed:
    """Answer 429 now: `held` refusals of this peer are waiting; the first ends in `retry_s`."""

    strikes: int
    retry_s: float


@dataclass(slots=True)
class _Peer:
    strikes: int
    last: float
    holds: deque[float] = field(default_factory=deque)
    """When each held refusal's delay ends, earliest first (delays never shrink in a run)."""


class Throttle:
    """Each peer's strikes and held refusals, and how its next refusal is answered."""

    def __init__(self, backoff: Backoff = Backoff()) -> None:
        self.backoff = backoff
        self._peers: dict[str, _Peer] = {}

    def refused(self, peer: str, now: float) -> Hold | Shed:
        """A token from `peer` was refused at `now`: count the strike, say how to answer."""
        state = self._peers.get(peer)
        if state is None or now - state.last >= self.backoff.forget_s:
            state = self._peers[peer] = _Peer(0, now)
            self._bound(now)
        state.strikes += 1
        state.last = now
        while state.holds and state.holds[0] <= now:
            state.holds.popleft()
        if len(state.holds) >= self.backoff.held:
            return Shed(state.strikes, state.holds[0] - now)
        wait = self.backoff.delay(state.strikes)
        state.holds.append(now + wait)
        return Hold(state.strikes, wait)

    def _bound(self, now: float) -> None:
        if len(self._peers) <= self.backoff.peers:
            return
        for peer in [p for p, s in self._peers.items() if now - s.last >= self.backoff.forget_s]:
            del self._peers[peer]
        while len(self._peers) > self.backoff.peers:
            del self._peers[min(self._peers, key=lambda p: self._peers[p].last)]


def peer_of(address: str) -> str:
    """Who the throttle counts against for a connection from `address`: an IPv4 address (an
    IPv4-mapped IPv6 one included) or an IPv6 /64; anything that is no IP literal, as is."""
    try:
        ip = ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, IPV6_NETWORK), strict=False))
    return str(ip)
