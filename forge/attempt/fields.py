"""Strict field readers shared by the cohort, Formula, plan and issue decoders.

Each reader takes the value and its path (`variants[1].name`) and raises `LabRefusal` with
`<file>: <path>: <problem>`, so a person knows exactly which field to fix. Booleans never count
as numbers and numbers never count as strings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from typing import Any

from forge.attempt.errors import LabRefusal


class Reader:
    """Reads one decoded document, naming the file in every refusal."""

    def __init__(self, file: str) -> None:
        self.file = file

    def refuse(self, path: str, problem: str) -> LabRefusal:
        where = f"{self.file}: {path}" if path else self.file
        return LabRefusal(f"{where}: {problem}")

    def obj(
        self,
        value: object,
        path: str,
        *,
        required: Collection[str],
        optional: Collection[str] = (),
    ) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.refuse(path, "must be an object")
        for key in value:
            if key not in required and key not in optional:
                raise self.refuse(_join(path, key), "unknown field")
        for key in sorted(required):
            if key not in value:
                raise self.refuse(_join(path, key), "missing required field")
        return value

    def integer(self, value: object, path: str, *, lo: int, hi: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.refuse(path, "must be an integer")
        if value < lo or (hi is not None and value > hi):
            bound = f"from {lo} to {hi}" if hi is not None else f"at least {lo}"
            raise self.refuse(path, f"must be an integer {bound}, got {value}")
        return value

    def positive_number(self, value: object, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.refuse(path, "must be a number")
        if not math.isfinite(value) or value <= 0:
            raise self.refuse(path, f"must be a finite number above 0, got {value}")
        return float(value)

    def string(self, value: object, path: str, *, max_chars: int | None = None) -> str:
        if not isinstance(value, str):
            raise self.refuse(path, "must be a string")
        if max_chars is not None and len(value) > max_chars:
            raise self.refuse(path, f"must be at most {max_chars} characters, got {len(value)}")
        return value

    def nonblank(self, value: object, path: str, *, max_chars: int | None = None) -> str:
        text = self.string(value, path, max_chars=max_chars)
        if not text.strip():
            raise self.refuse(path, "must not be blank")
        return text

    def matching(self, value: object, path: str, pattern: re.Pattern[str]) -> str:
        text = self.string(value, path)
        if pattern.fullmatch(text) is None:
            raise self.refuse(path, f"must match {pattern.pattern}, got {text!r}")
        return text

    def one_of(self, value: object, path: str, choices: tuple[str, ...]) -> str:
        text = self.string(value, path)
        if text not in choices:
            raise self.refuse(path, f"must be one of {', '.join(choices)}, got {text!r}")
        return text

    def array(self, value: object, path: str, *, lo: int = 0, hi: int | None = None) -> list[Any]:
        if not isinstance(value, list):
            raise self.refuse(path, "must be an array")
        if len(value) < lo or (hi is not None and len(value) > hi):
            bound = f"from {lo} to {hi}" if hi is not None else f"at least {lo}"
            raise self.refuse(path, f"must hold {bound} entries, got {len(value)}")
        return value

    def argv(self, value: object, path: str) -> tuple[str, ...]:
        items = self.array(value, path, lo=1)
        for index, item in enumerate(items):
            self.nonblank(item, f"{path}[{index}]")
        return tuple(items)

    def sha256(self, value: object, path: str) -> str:
        return self.matching(value, path, SHA256_RE)

    def clean_path(self, value: object, path: str) -> str:
        """A clean relative POSIX path: no absolute, `..`, `.`, empty segment, backslash or NUL."""
        text = self.string(value, path)
        problem = clean_path_problem(text)
        if problem is not None:
            raise self.refuse(path, f"{problem}: {text!r}")
        return text

    def unique(self, names: list[str], path: str, what: str) -> None:
        seen: set[str] = set()
        for index, name in enumerate(names):
            if name in seen:
                raise self.refuse(f"{path}[{index}].{what}", f"duplicate {what} {name!r}")
            seen.add(name)


SHA256_RE = re.compile(r"[0-9a-f]{64}")


def clean_path_problem(text: str) -> str | None:
    """Why `text` is not a clean relative path, or None when it is."""
    if not text:
        return "must be a non-empty relative path"
    if "\\" in text or "\x00" in text:
        return "must not contain a backslash or NUL"
    if text.startswith("/"):
        return "must be relative, not absolute"
    if any(part in ("", ".", "..") for part in text.split("/")):
        return "must be clean (no empty, '.' or '..' segment)"
    return None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
