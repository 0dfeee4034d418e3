"""The socket token: one secret in a 0600 file in forge's state directory.

Whoever can read the file can connect, which is the same boundary as the user's own files:
`forge attach` and `forge status` read it from here, a phone gets it once from the pairing URL.
The token itself is never logged; `fingerprint` (8 hex digits of its SHA-256) names it instead.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import tempfile
from pathlib import Path

from forge import paths
from forge.errors import UserError

TOKEN_BYTES = 32
"""`secrets.token_urlsafe(32)`: 256 bits, 43 url-safe characters."""


def token_path() -> Path:
    return paths.token_file()


def fingerprint(token: str) -> str:
    """What the log says instead of the token: the first 8 hex digits of its SHA-256."""
    return hashlib.sha256(token.encode()).hexdigest()[:8]


def read_token(path: Path | None = None) -> str | None:
    """The stored token, or None when there is no file (or it holds no token)."""
    path = path or token_path()
    try:  # os.open/os.read: the supervisor reads this at every upgrade, and open() costs 10x
        descriptor = os.open(path, os.O_RDONLY)
        try:
            data = os.read(descriptor, 4096)
        finally:
            os.close(descriptor)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise UserError(f"{path}: cannot read the token: {error.strerror or error}") from None
    return data.decode("utf-8", "replace").strip() or None


def ensure_token(path: Path | None = None) -> str:
    """The stored token, created on first use."""
    path = path or token_path()
    return read_token(path) or rotate_token(path)


def rotate_token(path: Path | None = None) -> str:
    """Write a fresh token (atomically, 0600 from the first byte) and return it."""
    path = path or token_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".token-")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:  # mkstemp's mode is 0600
            file.write(token + "\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return token
