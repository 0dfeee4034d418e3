"""Find the line of forge.toml a key sits on, so every refusal names the line a person edits.

tomllib keeps no positions, and tomlkit keeps none either. Rather than a second TOML grammar, the
real parser is asked: the shortest prefix of the file (in whole lines) whose parse holds the key is
where the key's statement ends. TOML never removes a key, so among prefixes that parse, holding the
key is monotone and the prefix is found by bisection (a cut inside a multi-line value does not
parse; the search steps past it). A value spanning lines (an array, an inline table) ends below its
key, so the line is then walked back to the one that names the key.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence

from forge.config.catalogue import TomlValue

KeyPath = tuple[str | int, ...]
"""A key as the parsed document reaches it: ("projects", 1, "path"), ("orgs", "acme.io")."""

_SYNTAX_POSITION = re.compile(r"\(at line (\d+), column \d+\)")
_HEADER = re.compile(r"^\s*\[\[?\s*(.+?)\s*\]\]?\s*(?:#.*)?$")
_ASSIGNED_KEY = re.compile(r"^\s*([^=#\[]+?)\s*=")


def line_of(text: str, path: KeyPath) -> int | None:
    """The 1-based line where `path` is set (or its table declared); None if the text lacks it."""
    lines = text.splitlines(keepends=True)

    def holds(end: int) -> bool | None:
        """Whether the first `end` lines hold the key; None when they do not parse on their own."""
        try:
            return _holds(tomllib.loads("".join(lines[:end])), path)
        except tomllib.TOMLDecodeError:
            return None

    if not holds(len(lines)):
        return None
    best, low, high = len(lines), 1, len(lines) - 1
    while low <= high:
        middle = (low + high) // 2
        cut, verdict = middle, holds(middle)
        while verdict is None and cut < high:
            cut += 1
            verdict = holds(cut)
        if verdict is None:
            high = middle - 1
        elif verdict:
            best, high = cut, middle - 1
        else:
            low = cut + 1
    return _walk_back_to_key(lines, best, path)


def syntax_error_line(text: str, message: str) -> int:
    """The line tomllib's message points at (its `at line N`, or the last line at end of text)."""
    found = _SYNTAX_POSITION.search(message)
    if found is not None:
        return int(found.group(1))
    return max(1, len(text.splitlines()))


def statement_start(text: str, line: int) -> int:
    """The line where the statement tomllib failed in begins. A value left open (an array, an
    inline table, a multi-line string) or a bad element inside one is reported where the parser
    gave up, which can be lines below the key that opened it: the statement begins just after the
    longest prefix above `line` that parses. Only lines that can begin a statement (a key or a
    header) are tried, so a long open value costs a parse per key inside it, not per line."""
    lines = text.splitlines(keepends=True)
    for start in range(min(line, len(lines)), 1, -1):
        opens = _ASSIGNED_KEY.match(lines[start - 1]) or _HEADER.match(lines[start - 1])
        if (start == line or opens) and _parses("".join(lines[: start - 1])):
            return start
    return 1


def _parses(text: str) -> bool:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    return True


def key_on_line(text: str, line: int) -> str | None:
    """The key a line assigns, under the table declared above it (`projects[2].shell` in the
    third [[projects]] entry), or the table a header line declares; None if the line has neither."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return None
    assigned = _ASSIGNED_KEY.match(lines[line - 1])
    if assigned is None:
        return _table_at(lines, line) if _HEADER.match(lines[line - 1]) else None
    table = _table_at(lines, line - 1)
    key = assigned.group(1)
    return key if table is None else f"{table}.{key}"


def _table_at(lines: Sequence[str], line: int) -> str | None:
    """The table the header nearest at or above `line` declares; an [[array]] entry by index."""
    for number in range(line, 0, -1):
        header = _HEADER.match(lines[number - 1])
        if header is None:
            continue
        name = header.group(1)
        if not lines[number - 1].lstrip().startswith("[["):
            return name
        entries = sum(1 for above in lines[:number] if _array_header(above) == name)
        return f"{name}[{entries - 1}]"
    return None


def _array_header(line: str) -> str | None:
    header = _HEADER.match(line)
    return header.group(1) if header and line.lstrip().startswith("[[") else None


def _holds(document: TomlValue, path: KeyPath) -> bool:
    node = document
    for part in path:
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                return False
            node = node[part]
        else:
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
    return True


def _walk_back_to_key(lines: Sequence[str], end: int, path: KeyPath) -> int:
    """From the statement's last line up to the nearest line naming the key, not past a header."""
    leaf = path[-1] if path else None
    if not isinstance(leaf, str):
        return end
    names_leaf = re.compile(r"(?:^|[\s{,.])[\"']?" + re.escape(leaf) + r"[\"']?\s*=")
    for number in range(end, 0, -1):
        line = lines[number - 1]
        if names_leaf.search(line):
            return number
        if _HEADER.match(line):
            break
    return end
