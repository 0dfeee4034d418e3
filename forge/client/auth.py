"""How forge's own clients authenticate on the socket: one place, used by every dialler.

`subprotocols()` is what a client offers on the upgrade: `forge.v1` and the token, read from
forge's state directory (the file `forge supervise` writes) unless one is given. The CLI, the
bench and the test kit all call it, so they authenticate exactly as a person's client does.
`dial_tls` is the TLS side for a supervisor named by forge.toml: trust the certificate it serves.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

from websockets.typing import Subprotocol

from forge.access.token import read_token
from forge.wire.auth import offer

if TYPE_CHECKING:
    from forge.config import ServerConfig


def subprotocols(token: str | None = None) -> list[Subprotocol]:
    """`["forge.v1", "forge.token.<token>"]`; only `forge.v1` when no token file exists yet."""
    return [Subprotocol(value) for value in offer(token if token is not None else read_token())]


def dial_tls(server: ServerConfig) -> ssl.SSLContext | None:
    """None for a plain socket; else a context that trusts the certificate forge.toml names."""
    if server.tls_cert is None:
        return None
    from forge.access.tls import trusting

    return trusting(server.tls_cert)
