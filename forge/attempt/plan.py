"""The evaluation plan (JSON, `schemaVersion: 1`) and its task, decoded strictly.

A plan freezes one task: the issue the harness sees, the hidden acceptance script it never sees,
the base commit, the files it may change, setup and checks. Paths are plan-relative and clean.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from forge.attempt.fields import Reader
from forge.attempt.strictjson import loads_object

PLAN_LIMIT = 1 << 20
"""Plans and issues are small documents; a megabyte is far past any real one."""

CHECK_CATEGORIES = ("test", "lint", "format", "typecheck", "build")
MAX_COMMAND_TIMEOUT_MS = 86_400_000
"""One day: a longer command or atom timeout is a typo, not a plan."""

_COMMIT_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True)
class Command:
    """A setup command or a check: argv run from `dir` (plan-root relative, "." = root)."""

    id: str
    argv: tuple[str, ...]
    timeout_ms: int
    dir: str = "."
    category: str = ""


@dataclass(frozen=True)
class Plan:
    task: str
    acceptance: str
    base_commit: str
    allowed_files: tuple[str, ...]
    setup: tuple[Command, ...]
    checks: tuple[Command, ...]
    candidate_test_files: tuple[str, ...]
    original_check_files: tuple[str, ...]
    require_initial_failure: bool = False
    """Replay proved the hidden acceptance fails at base; recorded, not re-checked by an attempt."""


@dataclass(frozen=True)
class Issue:
    """What the harness is told: the issue's title and body (untrusted text).

    `state`, when present, is frozen `OPEN`: a task models the issue as it was when work began
    (replay writes it even for an issue closed since).
    """

    title: str
    body: str


def decode_plan(raw: bytes, *, file: str) -> Plan:
    reader = Reader(file)
    top = reader.obj(
        loads_object(raw, file=file, limit=PLAN_LIMIT),
        "",
        required={"schemaVersion", "task", "acceptance", "baseCommit", "allowedFiles"},
        optional={
            "setup",
            "checks",
            "candidateTestFiles",
            "originalCheckFiles",
            "requireInitialFailure",
        },
    )
    require_initial_failure = top.get("requireInitialFailure", False)
    if not isinstance(require_initial_failure, bool):
        raise reader.refuse("requireInitialFailure", "must be true or false")
    reader.integer(top["schemaVersion"], "schemaVersion", lo=1, hi=1)
    setup_items = reader.array(top.get("setup", []), "setup")
    setup = tuple(_setup(reader, item, f"setup[{i}]") for i, item in enumerate(setup_items))
    reader.unique([command.id for command in setup], "setup", "id")
    plan = Plan(
        task=reader.clean_path(top["task"], "task"),
        acceptance=reader.clean_path(top["acceptance"], "acceptance"),
        base_commit=reader.matching(top["baseCommit"], "baseCommit", _COMMIT_RE),
        allowed_files=_paths(reader, top["allowedFiles"], "allowedFiles", lo=1),
        setup=setup,
        checks=read_checks(reader, top.get("checks", []), "checks"),
        candidate_test_files=_paths(
            reader, top.get("candidateTestFiles", []), "candidateTestFiles"
        ),
        original_check_files=_paths(
            reader, top.get("originalCheckFiles", []), "originalCheckFiles"
        ),
        require_initial_failure=require_initial_failure,
    )
    reader.check()
    return plan


def decode_issue(raw: bytes, *, file: str) -> Issue:
    reader = Reader(file)
    top = reader.obj(
        loads_object(raw, file=file, limit=PLAN_LIMIT),
        "",
        required={"title", "body"},
        optional={"state"},
    )
    if "state" in top:
        reader.one_of(top["state"], "state", ("OPEN",))
    issue = Issue(
        title=reader.nonblank(top["title"], "title", max_chars=1000),
        body=reader.string(top["body"], "body"),
    )
    reader.check()
    return issue


def read_checks(reader: Reader, value: object, path: str) -> tuple[Command, ...]:
    """`[{id, argv, category, timeoutMs}]`, shared by plans and Formula baseline checks."""
    checks: list[Command] = []
    for index, item in enumerate(reader.array(value, path)):
        where = f"{path}[{index}]"
        check = reader.obj(item, where, required={"id", "argv", "category", "timeoutMs"})
        checks.append(
            Command(
                id=reader.nonblank(check["id"], f"{where}.id", max_chars=64),
                argv=reader.argv(check["argv"], f"{where}.argv"),
                category=reader.one_of(check["category"], f"{where}.category", CHECK_CATEGORIES),
                timeout_ms=_timeout(reader, check["timeoutMs"], f"{where}.timeoutMs"),
            )
        )
    reader.unique([check.id for check in checks], path, "id")
    return tuple(checks)


def _setup(reader: Reader, value: object, path: str) -> Command:
    item = reader.obj(value, path, required={"id", "argv", "dir", "timeoutMs"})
    directory = reader.string(item["dir"], f"{path}.dir")
    if directory != ".":
        reader.clean_path(directory, f"{path}.dir")
    return Command(
        id=reader.nonblank(item["id"], f"{path}.id", max_chars=64),
        argv=reader.argv(item["argv"], f"{path}.argv"),
        timeout_ms=_timeout(reader, item["timeoutMs"], f"{path}.timeoutMs"),
        dir=directory,
    )


def _timeout(reader: Reader, value: object, path: str) -> int:
    return reader.integer(value, path, lo=1, hi=MAX_COMMAND_TIMEOUT_MS)


def _paths(reader: Reader, value: object, path: str, *, lo: int = 0) -> tuple[str, ...]:
    items = reader.array(value, path, lo=lo)
    return tuple(reader.clean_path(item, f"{path}[{i}]") for i, item in enumerate(items))


def is_test_file(path: str) -> bool:
    """`test_*.py`, `*_test.py` or `conftest.py`: the existing tests a protected view restores."""
    name = path.rsplit("/", 1)[-1]
    return name == "conftest.py" or (
        name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))
    )


MANIFESTS = ("pyproject.toml", "setup.py", "setup.cfg", "package.json", "go.mod")


def unanchored_paths(allowed_files: tuple[str, ...], base_files: set[str]) -> list[str]:
    """Allowed paths absent at base with no manifest in any ancestor directory (rule A15).

    A new file is only plausible inside a package the base already has; otherwise the plan is
    not ready, since no check could import or build it.
    """
    missing = []
    for path in allowed_files:
        if path in base_files:
            continue
        parts = path.split("/")[:-1]
        ancestors = ["/".join(parts[:depth]) for depth in range(len(parts) + 1)]
        if not any(
            (f"{folder}/{name}" if folder else name) in base_files
            for folder in ancestors
            for name in MANIFESTS
        ):
            missing.append(path)
    return missing
