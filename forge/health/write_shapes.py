"""The write shapes the queue holds: the allow-list both enqueue and replay check an argv against.

The shim spools only `gh issue create|comment|edit|close|reopen`, stored in one normal form (the
body moved to the entry's own sidecar as `--body-file`, the repo kept apart and passed as `-R` at
replay). Replay runs an entry only when its argv has exactly that form with the flags below, so
no entry, however it got into the queue, can run another gh command (`gist create`, `api`,
`repo delete`) or make gh read a file other than its own body. Enqueue checks the same shape
first: a write outside it is never spooled, so a queued write always passes at replay.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

BODY_FILE: Final = "--body-file"


@dataclass(frozen=True)
class Shape:
    """One verb's allow-list: whether it names an issue, and the flags it may carry."""

    takes_issue: bool
    value_flags: frozenset[str]
    """Flags followed by one value (stored as two words: `--title`, `VALUE`)."""
    bool_flags: frozenset[str] = frozenset()
    body: bool = False
    """May carry `--body-file SIDECAR` (its own sidecar, nothing else)."""
    required: frozenset[str] = frozenset()
    """At least one of these flags must be present."""


SHAPES: Final[Mapping[str, Shape]] = {
    "create": Shape(
        takes_issue=False,
        value_flags=frozenset(
            {
                "-t",
                "--title",
                "-l",
                "--label",
                "-a",
                "--assignee",
                "-m",
                "--milestone",
                "-p",
                "--project",
            }
        ),
        body=True,
        required=frozenset({"-t", "--title"}),
    ),
    "comment": Shape(takes_issue=True, value_flags=frozenset(), body=True),
    "edit": Shape(
        takes_issue=True,
        value_flags=frozenset(
            {
                "-t",
                "--title",
                "--add-label",
                "--remove-label",
                "--add-assignee",
                "--remove-assignee",
                "--add-project",
                "--remove-project",
                "-m",
                "--milestone",
            }
        ),
        bool_flags=frozenset({"--remove-milestone"}),
        body=True,
    ),
    "close": Shape(takes_issue=True, value_flags=frozenset({"-c", "--comment", "-r", "--reason"})),
    "reopen": Shape(takes_issue=True, value_flags=frozenset({"-c", "--comment"})),
}
"""What the queue replays, verb by verb; docs/health.md lists the same table."""

ISSUE_REF: Final = re.compile(
    r"#?[1-9][0-9]*|FORGE-Q[1-9][0-9]*"
    r"|https://[A-Za-z0-9.-]+(?::[0-9]+)?/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/(?:issues|pull)/[1-9][0-9]*"
)
"""An issue as gh takes it: a number, `#N`, a queue handle, or its URL."""
REPO: Final = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
HOST: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*(?::[0-9]+)?")


def refusal(
    *, kind: str, argv: Sequence[str], repo: str | None, host: str | None, body_file: str | None
) -> str | None:
    """Why this is not a write the queue replays, or None when it is one.

    `body_file` is the entry's own sidecar when it has a body: the only file gh may be told to
    read. The first problem found is named, with the word that breaks the shape.
    """
    shape = SHAPES.get(kind)
    command = " ".join(argv[:2])
    if shape is None or list(argv[:2]) != ["issue", kind]:
        allowed = "|".join(SHAPES)
        return f"`gh {command}` is not a write the queue replays (only gh issue {allowed})"
    if repo is not None and not REPO.fullmatch(repo):
        return f"repo {repo!r} is not OWNER/REPO"
    if host is not None and not HOST.fullmatch(host):
        return f"host {host!r} is not a host name"
    rest = list(argv[2:])
    if shape.takes_issue:
        if not rest or not ISSUE_REF.fullmatch(rest[0]):
            found = repr(rest[0]) if rest else "nothing"
            what = "a number, #N, FORGE-Q<n> or its URL"
            return f"`gh {command}` must name an issue ({what}), not {found}"
        rest = rest[1:]
    return _flags_refusal(command, shape, rest, body_file)


def _flags_refusal(
    command: str, shape: Shape, words: list[str], body_file: str | None
) -> str | None:
    seen: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word in shape.bool_flags:
            seen.append(word)
            continue
        if word == BODY_FILE and shape.body:
            if index >= len(words) or BODY_FILE in seen or words[index] != body_file:
                return f"`gh {command}` may read only its own body file ({body_file})"
            seen.append(word)
            index += 1
            continue
        if word not in shape.value_flags:
            return f"{word!r} is not among the flags the queue replays for `gh {command}`"
        if index >= len(words):
            return f"{word} has no value"
        seen.append(word)
        index += 1
    if body_file is not None and BODY_FILE not in seen:
        return f"`gh {command}` lost its body file ({body_file})"
    if shape.required and shape.required.isdisjoint(seen):
        return f"`gh {command}` needs {' or '.join(sorted(shape.required))}"
    return None
