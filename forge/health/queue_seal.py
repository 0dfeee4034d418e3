"""The queue's seal: an HMAC-SHA256 over each entry under a key kept in forge's state directory,
so replay can tell the entries this forge wrote from any other file. The entry carries the
SHA-256 of its body, so the seal covers the body too.

The key (32 random bytes in `$FORGE_STATE/queue.key`, mode 0600) is made on first use: written
whole to a private temp file and linked into place, so racing processes agree on one key and
none ever reads half of one. Losing the key refuses every entry sealed with it (fail closed).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from forge.errors import UserError

KEY_NAME: Final = "queue.key"
KEY_BYTES: Final = 32
DOMAIN: Final = b"forge-queue-entry:v1\0"
"""Binds a seal to this use and this format: no other HMAC under the key can pass for one."""


class QueueKeyError(UserError):
    """The key file exists but does not hold a key: nothing sealed can be verified."""


def key_path(state_dir: Path) -> Path:
    return state_dir / KEY_NAME


def load_key(state_dir: Path) -> bytes:
    """The queue key, made on first use."""
    path = key_path(state_dir)
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        key = _create(path)
    if len(key) != KEY_BYTES:
        raise QueueKeyError(
            f"forge's queue key {path} holds {len(key)} bytes, not {KEY_BYTES}: delete it to "
            "make a new one (every entry sealed with the old key is then refused)"
        )
    return key


def _create(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.unlink(missing_ok=True)  # a crashed process of the same pid left it
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, secrets.token_bytes(KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        with contextlib.suppress(FileExistsError):  # another process made it first: use theirs
            os.link(temp, path)
    finally:
        temp.unlink()
    return path.read_bytes()


def seal(key: bytes, fields: Mapping[str, Any]) -> str:
    """The HMAC of an entry's fields, its `mac` left out."""
    text = json.dumps(
        {name: value for name, value in fields.items() if name != "mac"},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )
    return hmac.new(key, DOMAIN + text.encode(), hashlib.sha256).hexdigest()


def verifies(key: bytes, fields: Mapping[str, Any], mac: str) -> bool:
    expected = seal(key, fields).encode()
    return hmac.compare_digest(expected, mac.encode("utf-8", "surrogatepass"))
