"""How a client proves it holds the token on the upgrade: two `Sec-WebSocket-Protocol` values.

A browser cannot set headers on a WebSocket, but it can offer subprotocols, and a native client
can too, so one transport serves both: the client offers `forge.v1` and `forge.token.<token>`,
and the server selects `forge.v1` (the token is never echoed back). The comparison is constant
time (`hmac.compare_digest`) so a wrong guess tells nothing about how close it was.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Sequence
from enum import Enum

SUBPROTOCOL = "forge.v1"
"""The subprotocol the server selects; a client must offer it for the handshake to complete."""
TOKEN_PREFIX = "forge.token."
"""The token travels as this prefix plus the token (url-safe base64 is a valid HTTP token)."""


class Verdict(Enum):
    """What the offered subprotocols say about the token."""

    ACCEPTED = "accepted"
    MISSING = "missing"
    WRONG = "wrong"


def offer(token: str | None) -> list[str]:
    """The subprotocols a client offers: `forge.v1`, plus the token when it has one."""
    return [SUBPROTOCOL] if token is None else [SUBPROTOCOL, TOKEN_PREFIX + token]


def judge(offered: Iterable[str], expected: str) -> Verdict:
    """Whether `offered` carries `expected`; more than one token value is a wrong one."""
    tokens = [value[len(TOKEN_PREFIX) :] for value in offered if value.startswith(TOKEN_PREFIX)]
    if not tokens:
        return Verdict.MISSING
    if len(tokens) > 1:
        return Verdict.WRONG
    given = tokens[0].encode("utf-8", "surrogateescape")
    return Verdict.ACCEPTED if hmac.compare_digest(given, expected.encode()) else Verdict.WRONG


def select(offered: Sequence[str]) -> str | None:
    """The subprotocol the server answers with: `forge.v1` when offered, else none at all."""
    return SUBPROTOCOL if SUBPROTOCOL in offered else None
