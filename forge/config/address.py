"""Where the supervisor is reached, and where a client finds it while forge.toml is broken.

`socket_url` and `page_url` are the URLs `[server] bind:port` is dialled at (a wildcard bind on
loopback). A supervisor that listens records its socket's URL under the forge.toml it loaded
(`record_listening`): it keeps serving that config while the file is broken, so a client command,
which needs nothing but the address, reads it back (`recorded_url`) instead of refusing to dial.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from forge import paths
from forge.config.model import ServerConfig
from forge.files import write_atomic

WILDCARD_TO_LOOPBACK = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}
"""A supervisor bound to every address is dialled on loopback."""

LISTENING_FILE = "listening.json"
"""In the state directory: forge.toml path -> the socket URL its supervisor last listened on."""


def _authority(server: ServerConfig) -> str:
    host = WILDCARD_TO_LOOPBACK.get(server.bind, server.bind)
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{server.port}"


def socket_url(server: ServerConfig) -> str:
    """`ws://<bind>:<port>/socket` (`wss://` with TLS), a wildcard bind dialled on loopback."""
    scheme = "ws" if server.tls_cert is None else "wss"
    return f"{scheme}://{_authority(server)}/socket"


def page_url(server: ServerConfig) -> str:
    """`http://<bind>:<port>/` (`https://` with TLS), the supervisor's own page (same host rule
    as `socket_url`)."""
    scheme = "http" if server.tls_cert is None else "https"
    return f"{scheme}://{_authority(server)}/"


def record_listening(source: Path, url: str) -> None:
    """Remember that the supervisor of `source` listens at `url` (replaced atomically)."""
    path = paths.state_dir() / LISTENING_FILE
    recorded = _read(path)
    recorded[str(source)] = url
    write_atomic(path, (json.dumps(recorded, indent=2) + "\n").encode(), mode=0o600)


def recorded_url(source: Path) -> str | None:
    """The socket URL the supervisor of `source` last listened on, if one ever did."""
    url = _read(paths.state_dir() / LISTENING_FILE).get(str(source))
    return url if isinstance(url, str) else None


def _read(path: Path) -> dict[str, Any]:
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}
