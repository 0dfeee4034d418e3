"""Showing untrusted text (issue titles, a learn command's failure, a model's prose, the title a
terminal's program set) safely.

Terminal escape sequences, control characters and Unicode format characters (the bidirectional
overrides and isolates among them) are removed, so text cannot move the cursor, recolour the
terminal or reorder what a reviewer reads; text is cut by characters, never inside one.
"""

from __future__ import annotations

import re
import unicodedata

_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
ONE_LINE_LIMIT = 500


def _keep(char: str, *, newlines: bool) -> bool:
    if newlines and char == "\n":
        return True
    return unicodedata.category(char) not in ("Cc", "Cf", "Zl", "Zp")


def clean(text: str, *, newlines: bool) -> str:
    text = _ESCAPES.sub("", text.replace("\r\n", "\n"))
    if not newlines:
        text = re.sub(r"[\n\t\r\u2028\u2029]+", " ", text)
    return "".join(c for c in text if _keep(c, newlines=newlines))


def one_line(text: str, limit: int = ONE_LINE_LIMIT) -> str:
    """One line, cleaned, at most `limit` characters (an ellipsis marks a cut)."""
    flat = " ".join(clean(text, newlines=False).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def prose(text: str, limit: int = 20_000) -> str:
    """Multi-line text, cleaned line by line, at most `limit` characters."""
    cleaned = clean(text.expandtabs(4), newlines=True)
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"
