"""Credential redaction for every tail the Lab keeps (failed checks, harness output).

Two passes: values of the caller's secret-looking environment variables become
`[REDACTED:<NAME>]`, then well-known credential shapes become `[REDACTED]`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

TAIL_BYTES = 8192
"""An output tail kept for a failure is the stream's last 8 KiB."""

_SECRET_NAME_RE = re.compile(r"TOKEN|SECRET|KEY|PASS|AUTH", re.IGNORECASE)
_MIN_SECRET_LEN = 6
_PATTERNS = [
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.DOTALL),
    re.compile(r"github_pat_[A-Za-z0-9_]+"),
    re.compile(r"gh[pousr]_[A-Za-z0-9]{16,}"),
    re.compile(r"sk-ant-[A-Za-z0-9_\-]+"),
    re.compile(r"sk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"AKIA[0-9A-Z]{16}"),
    re.compile(r"xox[abposr]-[A-Za-z0-9\-]+"),
    re.compile(r"Bearer\s+[A-Za-z0-9._~+/=\-]+"),
]


class Redactor:
    def __init__(self, caller_env: Mapping[str, str], passed: Collection[str] = ()) -> None:
        """`passed`: the variables a step is given, redacted whatever their names."""
        secrets = [
            (name, value)
            for name, value in caller_env.items()
            if (name in passed or _SECRET_NAME_RE.search(name)) and len(value) >= _MIN_SECRET_LEN
        ]
        self._secrets = sorted(secrets, key=lambda item: -len(item[1]))

    def text(self, text: str) -> str:
        for name, value in self._secrets:
            text = text.replace(value, f"[REDACTED:{name}]")
        for pattern in _PATTERNS:
            text = pattern.sub("[REDACTED]", text)
        return text

    def tail(self, data: bytes, limit: int = TAIL_BYTES) -> str:
        """The redacted last `limit` bytes of a stream, decoded leniently."""
        return self.text(data[-limit:].decode("utf-8", errors="replace"))
