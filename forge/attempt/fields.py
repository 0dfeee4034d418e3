"""Strict field readers shared by the cohort, Formula, plan and issue decoders.

Each reader takes the value and its path (`variants[1].name`) and notes a problem as
`<file>: <path>: <problem>`, so a person knows exactly which field to fix; it then returns a
stand-in value so decoding goes on, and `check()` refuses once with every problem, so a person
fixes them all in one round. A missing field is noted once: its reads return stand-ins silently.
Booleans never count as numbers and numbers never count as strings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from typing import Any, TypeVar

from forge.attempt.errors import LabRefusal, problems_of, refusal

T = TypeVar("T")


MISSING: Any = object()
"""What `obj` puts in place of a missing required field (already noted; reads of it stay quiet)."""


class Reader:
    """Reads one decoded document, naming the file in every problem it notes."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[str] = []

    def refuse(self, path: str, problem: str) -> LabRefusal:
        """A refusal naming one field, for a problem that stops decoding at once."""
        return LabRefusal(self._where(path, problem))

    def note(self, path: str, problem: str) -> None:
        self.problems.append(self._where(path, problem))

    def absorb(self, error: LabRefusal) -> None:
        """Another decoder's problems, listed with this document's."""
        self.problems += problems_of(error)

    def failed(self, path: str) -> bool:
        """Whether a problem was noted at `path` or below it."""
        prefix = self._where(path, "")[:-2]
        return any(p.startswith((prefix + ":", prefix + ".", prefix + "[")) for p in self.problems)

    def check(self) -> None:
        """Refuse with every noted problem, if any."""
        if self.problems:
            raise refusal(self.problems)

    def _where(self, path: str, problem: str) -> str:
        where = f"{self.file}: {path}" if path else self.file
        return f"{where}: {problem}"

    def obj(
        self,
        value: object,
        path: str,
        *,
        required: Collection[str],
        optional: Collection[str] = (),
    ) -> dict[str, Any]:
        """The object with every missing required field as `MISSING` (each noted once)."""
        if value is MISSING:
            return dict.fromkeys(required, MISSING)
        if not isinstance(value, dict):
            self.note(path, "must be an object")
            return dict.fromkeys(required, MISSING)
        found = dict(value)
        for key in value:
            if key not in required and key not in optional:
                self.note(_join(path, key), "unknown field")
        for key in sorted(required):
            if key not in value:
                self.note(_join(path, key), "missing required field")
                found[key] = MISSING
        return found

    def integer(self, value: object, path: str, *, lo: int, hi: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            return self._stand_in(value, path, "must be an integer", lo)
        if value < lo or (hi is not None and value > hi):
            bound = f"from {lo} to {hi}" if hi is not None else f"at least {lo}"
            self.note(path, f"must be an integer {bound}, got {value}")
            return lo
        return value

    def boolean(self, value: object, path: str) -> bool:
        if not isinstance(value, bool):
            return self._stand_in(value, path, "must be true or false", False)
        return value

    def positive_number(self, value: object, path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return self._stand_in(value, path, "must be a number", 1.0)
        if not math.isfinite(value) or value <= 0:
            self.note(path, f"must be a finite number above 0, got {value}")
            return 1.0
        return float(value)

    def string(self, value: object, path: str, *, max_chars: int | None = None) -> str:
        if not isinstance(value, str):
            return self._stand_in(value, path, "must be a string", "")
        if max_chars is not None and len(value) > max_chars:
            self.note(path, f"must be at most {max_chars} characters, got {len(value)}")
        return value

    def nonblank(self, value: object, path: str, *, max_chars: int | None = None) -> str:
        if not isinstance(value, str):
            return self.string(value, path)
        text = self.string(value, path, max_chars=max_chars)
        if not text.strip():
            self.note(path, "must not be blank")
        return text

    def matching(self, value: object, path: str, pattern: re.Pattern[str]) -> str:
        if not isinstance(value, str):
            return self.string(value, path)
        if pattern.fullmatch(value) is None:
            self.note(path, f"must match {pattern.pattern}, got {value!r}")
        return value

    def one_of(self, value: object, path: str, choices: tuple[str, ...]) -> str:
        if not isinstance(value, str):
            return self._stand_in(value, path, "must be a string", choices[0])
        if value not in choices:
            self.note(path, f"must be one of {', '.join(choices)}, got {value!r}")
            return choices[0]
        return value

    def array(self, value: object, path: str, *, lo: int = 0, hi: int | None = None) -> list[Any]:
        """The list (even of the wrong length, so its entries are checked too)."""
        if not isinstance(value, list):
            return self._stand_in(value, path, "must be an array", [])
        if len(value) < lo or (hi is not None and len(value) > hi):
            bound = f"from {lo} to {hi}" if hi is not None else f"at least {lo}"
            self.note(path, f"must hold {bound} entries, got {len(value)}")
        return value

    def argv(self, value: object, path: str) -> tuple[str, ...]:
        items = self.array(value, path, lo=1)
        return tuple(self.nonblank(item, f"{path}[{i}]") for i, item in enumerate(items))

    def sha256(self, value: object, path: str) -> str:
        return self.matching(value, path, SHA256_RE)

    def clean_path(self, value: object, path: str) -> str:
        """A clean relative POSIX path (no absolute, `..`, `.`, empty segment, backslash, NUL);
        `""` when it is not one, so nothing is read from it."""
        if not isinstance(value, str):
            return self.string(value, path)
        problem = clean_path_problem(value)
        if problem is not None:
            self.note(path, f"{problem}: {value!r}")
            return ""
        return value

    def absolute_path(self, value: object, path: str) -> str:
        """An absolute, normalised path (no `..`, `.` or empty segment, no NUL)."""
        if not isinstance(value, str):
            return self.string(value, path)
        problem = None if value.startswith("/") else "must be an absolute path"
        if problem is None and value != "/":
            problem = clean_path_problem(value[1:])
        if problem is not None:
            self.note(path, f"{problem}: {value!r}")
            return ""
        return value

    def unique(self, names: list[str], path: str, what: str) -> None:
        seen: set[str] = set()
        for index, name in enumerate(names):
            if name in seen:
                self.note(f"{path}[{index}].{what}", f"duplicate {what} {name!r}")
            seen.add(name)

    def _stand_in(self, value: object, path: str, problem: str, stand_in: T) -> T:
        if value is not MISSING:
            self.note(path, problem)
        return stand_in


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
