"""Strict JSON for files a person pins by hash: no BOM, no NaN, no duplicate keys, a size cap.

`json.loads` alone accepts `NaN`, `Infinity` and duplicate keys (the last wins), which would let two
readers of the same bytes disagree; this module refuses them.
"""

from __future__ import annotations

import json
from typing import Any

from forge.attempt.errors import LabRefusal


def loads_object(raw: bytes, *, file: str, limit: int) -> dict[str, Any]:
    """Decode `raw` as one JSON object of at most `limit` bytes, or refuse naming `file`."""
    if len(raw) > limit:
        raise LabRefusal(f"{file}: larger than {limit} bytes ({len(raw)})")
    if raw.startswith(b"\xef\xbb\xbf"):
        raise LabRefusal(f"{file}: starts with a byte-order mark; save it as plain UTF-8")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise LabRefusal(f"{file}: not UTF-8 ({error.reason} at byte {error.start})") from None
    try:
        value = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as error:
        raise LabRefusal(
            f"{file}: not strict JSON: {error.msg} (line {error.lineno} column {error.colno})"
        ) from None
    except _NotStrict as error:
        raise LabRefusal(f"{file}: {error}") from None
    if not isinstance(value, dict):
        raise LabRefusal(f"{file}: the top level must be a JSON object")
    return value


class _NotStrict(LabRefusal):
    """A JSON value strict JSON refuses (a constant, a duplicate key); the caller names the file."""


def _refuse_constant(name: str) -> Any:
    raise _NotStrict(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _NotStrict(f"duplicate key {key!r}")
        result[key] = value
    return result
