"""Replay's pure rules: which merged pull requests make tasks, and which tests grade them.

The rules for Python projects (docs/lab-replay.md lists each one):
hidden tests are the PR's added or modified `test_*.py`, `*_test.py` and `conftest.py` files; the
tests they define are their top-level `test*` functions and their test classes (`Test*` without an
`__init__`, or `unittest.TestCase` subclasses), addressed as pytest node ids.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass

from forge.attempt.fields import clean_path_problem
from forge.lab.replay_github import PullRequest

MAX_FILES = 25
MAX_LINES = 2000
MAX_NODEIDS_BYTES = 4000
"""The hidden tests' node ids, joined by spaces, are at most 4,000 bytes; past it the PR is
skipped (`hidden test node ids too long`)."""
PROJECT_MANIFESTS = ("pyproject.toml", "setup.py", "setup.cfg")


def is_test_file(path: str) -> bool:
    """pytest's default test file names, and the conftest.py files that shape them."""
    name = posixpath.basename(path)
    if name == "conftest.py":
        return True
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


@dataclass(frozen=True)
class HiddenFile:
    path: str
    previous: str | None
    """The path it was renamed from, removed from every tree the hidden tests run in."""


def hidden_test_files(pull: PullRequest) -> tuple[HiddenFile, ...]:
    """The PR's test files as of the merge commit: added, modified, renamed or copied."""
    return tuple(
        HiddenFile(f.path, f.previous if f.status == "renamed" else None)
        for f in sorted(pull.files, key=lambda f: f.path)
        if f.status != "removed" and is_test_file(f.path)
    )


def allowed_files(pull: PullRequest) -> tuple[str, ...]:
    """Every path the PR changed, plus a renamed file's previous path."""
    paths = {f.path for f in pull.files} | {f.previous for f in pull.files if f.previous}
    return tuple(sorted(paths))


def unsafe_paths(pull: PullRequest) -> list[str]:
    """Changed paths that are not clean relative paths (never written anywhere)."""
    return sorted(
        path
        for f in pull.files
        for path in (f.path, f.previous)
        if path is not None and clean_path_problem(path) is not None
    )


def changed_lines(pull: PullRequest) -> int:
    return sum(f.additions + f.deletions for f in pull.files)


def metadata_skip(pull: PullRequest, issue_number: int | None) -> str | None:
    """The first skip the PR's own metadata decides, in the order the checks below are made."""
    if not hidden_test_files(pull):
        return "no test changes (no added or modified test_*.py, *_test.py or conftest.py)"
    if issue_number is None:
        return "no linked issue (no Closes #N or Fixes #N in the body, no #N in the title)"
    count = max(pull.changed_files, len(pull.files))
    if count > MAX_FILES:
        return f"more than {MAX_FILES} changed files ({count})"
    lines = changed_lines(pull)
    if lines > MAX_LINES:
        return f"more than {MAX_LINES:,} changed lines ({lines:,})"
    if not any(f.path.endswith(".py") for f in pull.files):
        return "only non-Python changes"
    unsafe = unsafe_paths(pull)
    if unsafe:
        return f"infrastructure: unsafe path {unsafe[0]!r}"
    return None


@dataclass(frozen=True)
class BaseRule:
    commit: str
    rule: str
    """Recorded in approval.md."""


def squash_rule(parent: str) -> BaseRule:
    return BaseRule(parent, "single-parent merge commit (squash or rebase): baseCommit = merge^1")


def merge_base_rule(merge_base: str) -> BaseRule:
    return BaseRule(
        merge_base, "two-parent merge commit: baseCommit = merge-base(merge^1, merge^2)"
    )


def project_skip(test_paths: Iterable[str], merge_files: set[str]) -> str | None:
    """v1 assumption: one project at the repository root holds every hidden test.

    The root needs a manifest, and no hidden test may sit below a directory holding another one
    (a nested project has its own rootdir, imports and dependencies).
    """
    if not any(name in merge_files for name in PROJECT_MANIFESTS):
        return (
            "hidden tests outside the project: no pyproject.toml, setup.py or setup.cfg "
            "at the repository root"
        )
    for path in test_paths:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth])
            if any(f"{folder}/{name}" in merge_files for name in PROJECT_MANIFESTS):
                return f"hidden tests outside the project: {path} is in the nested project {folder}"
    return None


def defined_tests(path: str, source: bytes) -> list[str]:
    """The pytest node ids of the tests `source` defines at top level (raises SyntaxError)."""
    tree = ast.parse(source, filename=path)
    ids = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith("test"):
                ids.append(f"{path}::{node.name}")
        elif isinstance(node, ast.ClassDef) and _is_test_class(node):
            ids.append(f"{path}::{node.name}")
    return ids


def _is_test_class(node: ast.ClassDef) -> bool:
    if any(_base_name(base) == "TestCase" for base in node.bases):
        return True
    has_init = any(
        isinstance(item, ast.FunctionDef) and item.name == "__init__" for item in node.body
    )
    return node.name.startswith("Test") and not has_init


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def nodeids_too_long(nodeids: list[str]) -> bool:
    return len(" ".join(nodeids).encode()) > MAX_NODEIDS_BYTES
