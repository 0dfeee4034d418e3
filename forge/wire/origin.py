"""Which browser origins may open the socket (T04-T10, O-T5), and which may ask `/token-check`.

An Origin is read as `scheme://host[:port]` and nothing else: no userinfo, no path, a port of
digits only, an IPv6 host only in brackets. Scheme and host are lowercased and default ports
dropped before anything is compared, so a lookalike (`localhost.evil.com`, `[::1].evil.com`,
`127.0.0.1.nip.io`, `user@localhost`) never parses as one of ours.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

TAURI_ORIGINS = frozenset(
    {"tauri://localhost", "http://tauri.localhost", "https://tauri.localhost"}
)
"""T05: the desktop shell's own origins."""

_WEB_SCHEMES = {"http": 80, "https": 443}
SAME_ORIGIN_FETCH_SITES = frozenset({"same-origin", "none"})
"""`Sec-Fetch-Site` values a browser sends for its page's own requests and for a typed URL."""


@dataclass(frozen=True, slots=True)
class Origin:
    """A parsed, normalised origin; `port` is None when absent or the scheme's default."""

    scheme: str
    host: str
    port: int | None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if self.port is None else f":{self.port}"
        return f"{self.scheme}://{host}{port}"


def parse_origin(text: str) -> Origin | None:
    """The origin as scheme, host and port, or None when it is not exactly that shape."""
    scheme, sep, authority = text.strip().lower().partition("://")
    if not sep or not scheme or not authority or any(c in authority for c in "/?#@\\ "):
        return None
    if authority.startswith("["):
        host, bracket, rest = authority[1:].partition("]")
        if not bracket or not _is_ipv6(host):
            return None
    else:
        host, _, rest = authority.partition(":")
        rest = f":{rest}" if ":" in authority else ""
        if not host or ":" in rest[1:]:
            return None
    try:
        port = _port(rest)
    except ValueError:
        return None
    if port == _WEB_SCHEMES.get(scheme):
        port = None
    return Origin(scheme, host, port)


def _port(rest: str) -> int | None:
    """`""` → None; `":8080"` → 8080; anything else (`":"`, `":abc"`, `":99999"`) → ValueError."""
    if not rest:
        return None
    digits = rest[1:]
    if rest[0] != ":" or not digits.isascii() or not digits.isdigit():
        raise ValueError(rest)
    value = int(digits)
    if not 0 < value < 65536:
        raise ValueError(rest)
    return value


def _is_ipv6(host: str) -> bool:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return False
    return True


def is_loopback_host(host: str) -> bool:
    """`localhost` itself, or an IP literal on loopback (including `::ffff:127.0.0.0/104`)."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    """The origins this server takes besides the fixed ones: its own, and the configured list."""

    own: Origin | None
    allowed: frozenset[Origin]

    @classmethod
    def build(
        cls, *, bind: str, port: int, allowed_origins: Iterable[str], scheme: str = "http"
    ) -> OriginPolicy:
        """`scheme` is what the port serves: `https` once it speaks TLS."""
        own_host = f"[{bind}]" if ":" in bind else bind
        listed = (parse_origin(entry) for entry in allowed_origins)
        return cls(
            own=parse_origin(f"{scheme}://{own_host}:{port}"),
            allowed=frozenset(origin for origin in listed if origin is not None),
        )

    def allows(self, header: str | None) -> bool:
        """T04-T09: no header is a native client; otherwise one of the allowed kinds of origin."""
        if header is None:
            return True
        if header.strip().lower() in TAURI_ORIGINS:
            return True
        origin = parse_origin(header)
        if origin is None:
            return False
        if origin.scheme in _WEB_SCHEMES and is_loopback_host(origin.host):
            return True
        return origin == self.own or origin in self.allowed


def same_origin_or_native(
    origins: Sequence[str], fetch_sites: Sequence[str], hosts: Sequence[str], scheme: str
) -> bool:
    """Whether a plain GET comes from no page at all (a native client: neither header) or from a
    page on the origin it was sent to (`scheme://Host`).

    Browsers send `Sec-Fetch-Site` on every request (Chromium, Firefox 90, Safari 16.4) and send
    no `Origin` on a same-origin GET, or on a cross-site one in `no-cors` mode (an `<img>`, a
    fetch that asks for no answer): so a `Sec-Fetch-Site` other than `same-origin` or `none` is
    refused, and so is an `Origin` other than the request's own. A header sent twice is refused.
    """
    if len(origins) > 1 or len(fetch_sites) > 1:
        return False
    if fetch_sites and fetch_sites[0].strip().lower() not in SAME_ORIGIN_FETCH_SITES:
        return False
    if not origins:
        return True
    if len(hosts) != 1:
        return False
    own = parse_origin(f"{scheme}://{hosts[0]}")
    return own is not None and parse_origin(origins[0]) == own
