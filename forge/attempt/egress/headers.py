"""How a plain `http://` request and its response cross the proxy: the headers rewritten (pure).

The proxy is an intermediary (RFC 9110 7.6.1, RFC 9112 3.2.2): hop-by-hop fields, and those the
`Connection` field names, stop at it; the request's `Host` is the destination it judged, never
the one the client wrote; and each request gets its own upstream connection, closed after the
response, so a second request on the client's connection is judged again rather than following
the first one's connection to wherever it went.
"""

from __future__ import annotations

from collections.abc import Iterable

from forge.attempt.egress.policy import Destination

Headers = list[tuple[bytes, bytes]]

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"upgrade",
    }
)
"""`upgrade` among them: a plain request is never switched to another protocol (use CONNECT)."""


def _end_to_end(headers: Iterable[tuple[bytes, bytes]]) -> Headers:
    pairs = [(name.lower(), value) for name, value in headers]
    named = {
        token.strip().lower()
        for name, value in pairs
        if name == b"connection"
        for token in value.split(b",")
    }
    return [(n, v) for n, v in pairs if n not in HOP_BY_HOP and n not in named]


def request_headers(headers: Iterable[tuple[bytes, bytes]], dest: Destination) -> Headers:
    """The request's end-to-end fields (its body framing kept), `Host` set to `dest`, and
    `Connection: close`."""
    host = str(dest).removesuffix(":80").encode("ascii")
    kept = [(n, v) for n, v in _end_to_end(headers) if n != b"host"]
    return [(b"host", host), *kept, (b"connection", b"close")]


def response_headers(headers: Iterable[tuple[bytes, bytes]]) -> Headers:
    """The response's end-to-end fields; its framing is redone for the client (`Content-Length`
    kept, `Transfer-Encoding` dropped: h11 chunks a body of unknown length for an HTTP/1.1
    client and closes after it for an HTTP/1.0 one)."""
    return [(n, v) for n, v in _end_to_end(headers) if n != b"transfer-encoding"]
