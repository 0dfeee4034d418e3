"""Pairing a phone: the page URL with the token in its fragment, as text and as a QR code.

The token rides in the fragment (`#token=...`), which a browser never sends to a server or a
proxy, so it reaches only the page, which keeps it and offers it on every upgrade. Which host
the URL names is chosen by `page_host` from what forge knows: a certificate's own name when
there is one (a tailnet's), else the bind address, else (a wildcard bind) the machine's first
LAN address.
"""

from __future__ import annotations

import io
import ipaddress
import socket
from dataclasses import dataclass
from typing import TextIO

import psutil
import segno

from forge.access.tls import leaf_der, names_of, self_signed_pair
from forge.access.token import ensure_token
from forge.config import ServerConfig
from forge.wire.origin import is_loopback_host

WILDCARDS = ("0.0.0.0", "::", "")
LOOPBACK_NOTE = (
    "This supervisor listens on loopback only: a phone cannot reach it directly "
    "(docs/access.md: a tailnet or a reverse proxy).\n"
)
PLAIN_NOTE = (
    "Without TLS a phone's browser offers no microphone (dictation) and the token crosses the "
    "network in clear: see docs/access.md.\n"
)


@dataclass(frozen=True, slots=True)
class Reach:
    """What the pairing URL is built from."""

    scheme: str
    bind: str
    port: int
    cert_names: tuple[str, ...]
    """The DNS names of a certificate not made by forge (a tailnet's, a CA's); else empty."""
    addresses: tuple[str, ...]
    """The machine's interface addresses, in the order the system lists them."""


def page_host(reach: Reach) -> str:
    """The host a phone should open: the certificate's name, the bind, or a LAN address."""
    for name in reach.cert_names:
        if not _is_ip(name) and name != "localhost" and not name.startswith("*"):
            return name
    if reach.bind not in WILDCARDS:
        return reach.bind
    for address in reach.addresses:
        ip = ipaddress.ip_address(address)
        if ip.version == 4 and not ip.is_loopback and not ip.is_link_local:
            return address
    return socket.gethostname()


def page_url(reach: Reach, host: str | None = None) -> str:
    """`scheme://host:port/`: the page's address (an IPv6 host in brackets)."""
    host = host or page_host(reach)
    shown = f"[{host}]" if ":" in host else host
    return f"{reach.scheme}://{shown}:{reach.port}/"


def pairing_url(page: str, token: str) -> str:
    """The page's address with the token in its fragment."""
    return f"{page.split('#', 1)[0]}#token={token}"


def qr_text(url: str) -> str:
    """The URL as a QR code drawn with Unicode half blocks (two rows of modules per line)."""
    out = io.StringIO()
    segno.make(url, error="m").terminal(out=out, compact=True)
    return out.getvalue()


def reach_of(server: ServerConfig) -> Reach:
    """Gather what `page_host` chooses from: the certificate's names, the machine's addresses."""
    cert_names: tuple[str, ...] = ()
    if server.tls_cert is not None and server.tls_cert != self_signed_pair().cert:
        try:
            cert_names = tuple(names_of(leaf_der(server.tls_cert.read_bytes())))
        except (OSError, ValueError):
            cert_names = ()
    addresses = tuple(
        address.address
        for entries in psutil.net_if_addrs().values()
        for address in entries
        if address.family in (socket.AF_INET, socket.AF_INET6) and "%" not in address.address
    )
    scheme = "http" if server.tls_cert is None else "https"
    return Reach(scheme, server.bind, server.port, cert_names, addresses)


def print_pairing(out: TextIO, server: ServerConfig, *, page: str | None = None) -> None:
    """The QR code and the text URL, for a person at this terminal; `page` overrides the
    address (a reverse proxy's)."""
    url = pairing_url(page or page_url(reach_of(server)), ensure_token())
    out.write(qr_text(url))
    out.write(f"Open on your phone (the token is after #; keep it private):\n  {url}\n")
    if page is None and is_loopback_host(server.bind):
        out.write(LOOPBACK_NOTE)
    elif url.startswith("http://"):
        out.write(PLAIN_NOTE)


def announce(out: TextIO, server: ServerConfig, *, terminal: bool) -> None:
    """What `forge supervise` prints after its listening line: the pairing URL to a terminal only
    (a service's output goes to a journal, where a token must not end up; there the one listening
    line is all), QR and all when a phone can reach the bind."""
    if server.auth == "none" or not terminal:
        return
    if is_loopback_host(server.bind):
        url = pairing_url(page_url(reach_of(server)), ensure_token())
        out.write(f"Open in a browser on this machine:\n  {url}\n")
    else:
        print_pairing(out, server)
    out.flush()


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
