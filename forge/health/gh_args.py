"""Reading and rewriting the argv of an allowlisted gh issue write, without running anything.

gh's flags are parsed the way cobra does for the `issue` verbs: the flags in VALUE_FLAGS take the
next argument (or `--flag=value`), the first other non-flag argument is the target.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

SPOOLABLE: Final[frozenset[str]] = frozenset({"create", "comment", "edit", "close", "reopen"})
"""What a run actually writes. delete/transfer/lock are absent on purpose: replayed hours later
against a forge that moved on, they would be damage, not resilience."""

VALUE_FLAGS: Final[frozenset[str]] = frozenset(
    {
        "-b",
        "--body",
        "-F",
        "--body-file",
        "-R",
        "--repo",
        "-t",
        "--title",
        "-a",
        "--assignee",
        "-l",
        "--label",
        "-m",
        "--milestone",
        "-p",
        "--project",
        "-T",
        "--template",
        "--recover",
        "--add-label",
        "--remove-label",
        "--add-assignee",
        "--remove-assignee",
        "--add-project",
        "--remove-project",
        "-c",
        "--comment",
        "-r",
        "--reason",
        "--type",
    }
)
BODY_FLAGS: Final = ("-b", "--body")
BODY_FILE_FLAGS: Final = ("-F", "--body-file")
REPO_FLAGS: Final = ("-R", "--repo")
TITLE_FLAGS: Final = ("-t", "--title")
HANDLE: Final = re.compile(r"FORGE-Q([1-9][0-9]*)")


@dataclass(frozen=True)
class Option:
    flag: str
    value: str | None
    """None for a boolean flag."""


@dataclass(frozen=True)
class ParsedWrite:
    kind: str
    target: str | None
    options: tuple[Option, ...]
    positionals: tuple[str, ...]

    def value(self, flags: Sequence[str]) -> str | None:
        """The last value given to any of `flags`, as gh (cobra) takes the last one."""
        found = None
        for option in self.options:
            if option.flag in flags:
                found = option.value
        return found


def spoolable_kind(argv: Sequence[str]) -> str | None:
    if len(argv) >= 2 and argv[0] == "issue" and argv[1] in SPOOLABLE:
        return argv[1]
    return None


def parse_write(argv: Sequence[str]) -> ParsedWrite:
    kind = argv[1]
    options: list[Option] = []
    positionals: list[str] = []
    rest = list(argv[2:])
    index = 0
    while index < len(rest):
        word = rest[index]
        index += 1
        if word == "--":
            positionals.extend(rest[index:])
            break
        if word.startswith("--") and "=" in word:
            flag, value = word.split("=", 1)
            options.append(Option(flag, value))
        elif word in VALUE_FLAGS and index < len(rest):
            options.append(Option(word, rest[index]))
            index += 1
        elif len(word) > 2 and word[:2] in VALUE_FLAGS and not word.startswith("--"):
            options.append(Option(word[:2], word[2:]))
        elif word.startswith("-") and word != "-":
            options.append(Option(word, None))
        else:
            positionals.append(word)
    target = positionals[0] if positionals and kind != "create" else None
    return ParsedWrite(kind, target, tuple(options), tuple(positionals))


def replayable_argv(parsed: ParsedWrite, body_path: str | None) -> list[str]:
    """The write as replay will run it: the body moved into its sidecar, the repo left to `-R`."""
    argv = ["issue", parsed.kind, *parsed.positionals[:1]]
    for option in parsed.options:
        if option.flag in (*BODY_FLAGS, *BODY_FILE_FLAGS, *REPO_FLAGS):
            continue
        argv.append(option.flag)
        if option.value is not None:
            argv.append(option.value)
    if body_path is not None:
        argv += ["--body-file", body_path]
    argv += list(parsed.positionals[1:])
    return argv


def handles_in(argv: Sequence[str]) -> list[str]:
    """Every argument that is exactly FORGE-Q<n>, in order, without repeats."""
    seen: list[str] = []
    for word in argv:
        if HANDLE.fullmatch(word) and word not in seen:
            seen.append(word)
    return seen


def substitute(argv: Sequence[str], handles: dict[str, int]) -> list[str]:
    """Resolved handles replaced in place; anything else untouched."""
    return [str(handles[word]) if word in handles else word for word in argv]


def handle_seq(handle: str) -> int:
    match = HANDLE.fullmatch(handle)
    if match is None:
        raise ValueError(f"not a queue handle: {handle!r}")
    return int(match.group(1))


_REMOTE: Final = re.compile(
    r"^(?:[a-z+]+://)?(?:[^@/]+@)?(?P<host>[^/:]+)[:/](?P<repo>[^/]+/[^/]+?)(?:\.git)?/?$"
)


def repo_from_remote(url: str) -> tuple[str, str] | None:
    """(host, owner/repo) from an https, ssh or scp-style git remote URL."""
    match = _REMOTE.match(url.strip())
    if match is None:
        return None
    return match.group("host"), match.group("repo")


def split_repo(value: str) -> tuple[str | None, str]:
    """`-R` accepts OWNER/REPO or HOST/OWNER/REPO."""
    parts = value.split("/")
    if len(parts) == 3:
        return parts[0], f"{parts[1]}/{parts[2]}"
    return None, value
