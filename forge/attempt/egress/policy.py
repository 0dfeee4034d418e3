"""Which destinations the egress proxy admits: pure functions, no resolving and no sockets.

Two policies. The public network (an atom's `network: true`): a destination is admitted only at
global unicast addresses that are not this machine's own, so neither the host's loopback services
(the Dask scheduler among them), nor its LAN, nor a link-local metadata service is reachable. An
allow-list (an atom's `egress: ["host:port", ...]`): only the listed pairs, judged on the name
the client asked for *before* it is resolved, and then at public addresses only; a loopback
address is reached only when listed literally (`127.0.0.1:8080`: a test's scripted model server).

A destination is judged in two steps, so the proxy can refuse before any lookup: `screen` (the
list, and an address given literally) and, for a name, `judge` on the addresses it resolved to.
The proxy then connects to exactly the addresses `judge` kept, so a name that resolves to a
public address when judged cannot be swapped for a private one when connected (DNS rebinding).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from forge.errors import PeerError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

SHARED_ADDRESS_SPACE = ipaddress.IPv4Network("100.64.0.0/10")
"""RFC 6598, carrier-grade NAT: a provider's internal network, never the public one."""
_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
_MAX_NAME = 253


class BadDestination(PeerError):
    """A proxy request that names no valid destination; the message says what was wrong."""


@dataclass(frozen=True, order=True)
class Destination:
    """Where a client asked to go: a lowercase name without a trailing dot, or an address."""

    host: str
    port: int

    @property
    def address(self) -> IPAddress | None:
        """The address, when the client gave one rather than a name."""
        try:
            return ipaddress.ip_address(self.host)
        except ValueError:
            return None

    def __str__(self) -> str:
        address = self.address
        if address is not None and address.version == 6:
            return f"[{self.host}]:{self.port}"
        return f"{self.host}:{self.port}"


def destination(host: str, port: int) -> Destination:
    """A checked destination: a DNS name or an IP address, and a port from 1 to 65535."""
    if not 1 <= port <= 65535:
        raise BadDestination(f"port {port} is not between 1 and 65535")
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return Destination(_name(host), port)
    if address.version == 6 and address.scope_id:
        raise BadDestination(f"{host}: an address with a zone is not a destination")
    return Destination(address.compressed, port)


def _name(host: str) -> str:
    name = host.lower().removesuffix(".")
    if not name or len(name) > _MAX_NAME or not all(_LABEL.fullmatch(p) for p in name.split(".")):
        raise BadDestination(f"{host!r} is not a host name or an IP address")
    return name


def parse_authority(text: str) -> Destination:
    """`host:port` or `[v6]:port`: a CONNECT target or an allow-list entry (the port required)."""
    host, colon, port = text.rpartition(":")
    if not colon or not host or not port.isdigit() or (":" in host and not host.startswith("[")):
        raise BadDestination(f"{text!r} is not host:port")
    return destination(host, int(port))


def parse_proxy_url(target: str) -> tuple[Destination, str]:
    """An absolute `http://` request target: where it goes and the origin-form path to send."""
    try:
        parts = urlsplit(target)
        port = parts.port or 80
    except ValueError as error:
        raise BadDestination(f"{target!r}: {error}") from None
    if parts.scheme != "http":
        raise BadDestination(
            f"{target!r}: a plain request must name an http:// URL "
            "(use CONNECT for https, as HTTPS_PROXY does)"
        )
    if not parts.hostname or "@" in parts.netloc:
        raise BadDestination(f"{target!r}: the URL must name a host and no user")
    path = parts.path or "/"
    return destination(parts.hostname, port), f"{path}?{parts.query}" if parts.query else path


def address_problem(address: IPAddress, own: frozenset[IPAddress] = frozenset()) -> str | None:
    """Why `address` is not on the public network (None when it is): what it is, named."""
    checks = (
        (address.is_unspecified, "unspecified"),
        (address.is_loopback, "loopback"),
        (address.is_link_local, "link-local"),
        (address.is_multicast, "multicast"),
        (address.version == 4 and address in SHARED_ADDRESS_SPACE, "shared (carrier-grade NAT)"),
        (address.is_private, "private"),
        (address.is_reserved, "reserved"),
        (address.version == 6 and address.is_site_local, "site-local"),
        (not address.is_global, "non-global"),
    )
    for hit, kind in checks:
        if hit:
            return f"{kind} address {address}"
    if address in own:
        return f"this machine's own address {address}"
    if isinstance(address, ipaddress.IPv6Address) and address.sixtofour is not None:
        embedded = address_problem(address.sixtofour, own)
        if embedded is not None:
            return f"6to4 address {address} of a {embedded}"
    return None


@dataclass(frozen=True)
class Policy:
    """What a sandbox may reach: the public network, or only the listed destinations on it."""

    allowed: frozenset[Destination] | None
    """None for the public network; the listed host:port pairs for an allow-list."""
    own: frozenset[IPAddress] = frozenset()
    """This machine's addresses: a public one still reaches its services."""

    @property
    def name(self) -> str:
        return "public" if self.allowed is None else "allow-list"


def public_policy(*, own: Iterable[IPAddress]) -> Policy:
    """The public network; `own` is this machine's addresses (`proxy.machine_addresses`)."""
    return Policy(None, frozenset(own))


def allow_list_policy(entries: Iterable[str], *, own: Iterable[IPAddress]) -> Policy:
    """From `host:port` entries (`BadDestination` names the first that is not one)."""
    return Policy(frozenset(parse_authority(e) for e in entries), frozenset(own))


def entry_problem(dest: Destination) -> str | None:
    """Why an allow-list entry could never be reached (None when it can): a literal address off
    the public network other than loopback, or a name for this machine."""
    if dest.host == "localhost" or dest.host.endswith(".localhost"):
        return "name loopback by its address (127.0.0.1:PORT), which is reached without a lookup"
    address = dest.address
    if address is None or address.is_loopback:
        return None
    problem = address_problem(address)
    return None if problem is None else f"a {problem} is never reachable; list loopback or public"


@dataclass(frozen=True)
class Decision:
    """The proxy's answer for one destination."""

    admitted: bool
    reason: str
    addresses: tuple[IPAddress, ...] = ()
    """Where to connect, in order, when admitted."""


def screen(policy: Policy, dest: Destination) -> Decision | None:
    """The decision that needs no lookup: the list, and a literal address. None: resolve the
    name and `judge` what it resolves to."""
    if policy.allowed is not None and dest not in policy.allowed:
        return Decision(False, "not on the egress list")
    address = dest.address
    if address is None:
        return None
    if policy.allowed is not None and address.is_loopback:
        return Decision(True, f"listed loopback address {address}", (address,))
    problem = address_problem(address, policy.own)
    if problem is not None:
        return Decision(False, problem)
    return Decision(True, f"public address {address}", (address,))


def judge(policy: Policy, addresses: Sequence[IPAddress]) -> Decision:
    """A name's decision from what it resolved to: admitted at its public addresses only."""
    if not addresses:
        return Decision(False, "the name did not resolve")
    public = tuple(a for a in addresses if address_problem(a, policy.own) is None)
    if not public:
        return Decision(False, f"resolves to a {address_problem(addresses[0], policy.own)}")
    return Decision(True, f"public address {public[0]}", public)
