"""What replay writes for one task, rendered purely: the hidden inputs and the reviewer's pages.

`hidden/pr-N/` holds what the cohort runner consumes (plan.json, issue.json, acceptance.sh) and
the raw hidden tests (files/); `tasks/pr-N/` holds only what a person reads (task.md, approval.md,
which pins every hidden artifact by SHA-256). Nothing under `tasks/` embeds a hidden test.
"""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from forge.lab.replay_layout import Layout
from forge.lab.replay_pytest import pytest_argv
from forge.lab.replay_rules import BaseRule, HiddenFile
from forge.untrusted import one_line

CHECK_TIMEOUT_MS = 600_000
HEREDOC = "FORGE_HIDDEN_TEST_EOF"


@dataclass(frozen=True)
class TaskFacts:
    """Everything a built task records."""

    repo: str
    number: int
    pr_title: str
    merge_commit: str
    base: BaseRule
    issue_number: int
    issue_title: str
    issue_body: str
    issue_state: str
    allowed_files: tuple[str, ...]
    hidden: tuple[HiddenFile, ...]
    hidden_bytes: dict[str, bytes]
    nodeids: tuple[str, ...]
    python: str
    layout: Layout
    """How the project is imported: the path rule every run of its tests follows."""
    initial_failure: str
    """`test-failure` or `test-compile`."""
    failing_at_base: tuple[str, ...] = ()
    contract: str | None = None
    identifiers: tuple[str, ...] = ()
    other_errors: tuple[str, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        return f"pr-{self.number}"

    @property
    def task_source(self) -> str:
        return "current-issue-body" + ("+interface-contract" if self.contract else "")

    @property
    def test_paths(self) -> tuple[str, ...]:
        return tuple(sorted(h.path for h in self.hidden))


def plan_document(facts: TaskFacts) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "task": "issue.json",
        "acceptance": "acceptance.sh",
        "baseCommit": facts.base.commit,
        "allowedFiles": list(facts.allowed_files),
        "originalCheckFiles": list(facts.test_paths),
        "candidateTestFiles": list(facts.test_paths),
        "requireInitialFailure": True,
        "checks": [
            {
                "id": "pytest",
                "argv": check_argv(facts),
                "category": "test",
                "timeoutMs": CHECK_TIMEOUT_MS,
            }
        ],
    }


def check_argv(facts: TaskFacts) -> list[str]:
    """`PYTHON -m pytest -q`, through a shell that sets the path rule when the layout has one:
    the check runs from the view's top level, so `$PWD` is the view whatever its path."""
    argv = [facts.python, "-m", "pytest", "-q"]
    rule = facts.layout.shell_pythonpath()
    if not rule:
        return argv
    return ["sh", "-c", f'{rule} exec "$@"', "sh", *argv]


def issue_body(facts: TaskFacts) -> str:
    if facts.contract is None:
        return facts.issue_body
    return f"{facts.issue_body.rstrip()}\n\n{facts.contract}"


def issue_document(facts: TaskFacts) -> dict[str, Any]:
    title = one_line(facts.issue_title, 1000) or f"Issue #{facts.issue_number}"
    return {"title": title, "body": issue_body(facts), "state": "OPEN"}


def acceptance_script(facts: TaskFacts) -> str:
    """Copy the workspace, write the hidden tests as of the merge commit, run only their tests."""
    lines = [
        "#!/bin/sh",
        f"# forge replay: hidden acceptance for {facts.repo}#{facts.number} "
        f"(merge commit {facts.merge_commit}).",
        "# Copies the workspace to a throwaway tree, writes the pull request's test files as of",
        "# the merge commit into it and runs only the tests they define, so grading never",
        "# rewrites tracked content and an unrelated test can never decide acceptance.",
        "set -eu",
        'scratch=$(mktemp -d "${TMPDIR:-/tmp}/forge-acceptance.XXXXXX")',
        "trap 'rm -rf \"$scratch\"' EXIT",
        "trap 'exit 130' INT",
        "trap 'exit 143' TERM",
        'cp -R . "$scratch/tree"',
        'cd "$scratch/tree"',
    ]
    for hidden in facts.hidden:
        if hidden.previous is not None:
            lines.append(f"rm -f -- {shlex.quote(hidden.previous)}")
    for path in facts.test_paths:
        folder = path.rpartition("/")[0]
        if folder:
            lines.append(f"mkdir -p -- {shlex.quote(folder)}")
        encoded = base64.encodebytes(facts.hidden_bytes[path]).decode().rstrip("\n")
        lines += [f"base64 -d > {shlex.quote(path)} <<'{HEREDOC}'", encoded, HEREDOC]
    command = shlex.join(pytest_argv(facts.python, facts.nodeids, events=False))
    variables = " ".join(
        filter(None, [facts.layout.shell_pythonpath(), "PYTHONDONTWRITEBYTECODE=1"])
    )
    lines += ["status=0", f"{variables} {command} || status=$?", 'exit "$status"']
    return "\n".join(lines) + "\n"


def fenced(text: str, info: str = "text") -> str:
    """`text` in a code fence longer than any backtick run inside it (shown, never rendered)."""
    longest = current = 0
    for char in text:
        current = current + 1 if char == "`" else 0
        longest = max(longest, current)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip()}\n{fence}"


def task_markdown(facts: TaskFacts) -> str:
    parts = [
        f"# Task {facts.name}: {one_line(facts.issue_title, 200)}",
        "",
        f"The issue below is untrusted text from {facts.repo}#{facts.issue_number}, shown "
        "verbatim for review; it is what the coding harness is told.",
        "",
        fenced(f"{facts.issue_title}\n\n{facts.issue_body}"),
        "",
    ]
    if facts.contract is not None:
        parts += [facts.contract, ""]
    return "\n".join(parts)


def approval_markdown(facts: TaskFacts, pins: Sequence[tuple[str, str]], *, sandbox: str) -> str:
    """The reviewer's summary: where the task came from, why it is valid, and every pin."""
    lines = [
        f"# Replay approval: {facts.name} ({facts.repo}#{facts.number})",
        "",
        f"Review this page and tasks/{facts.name}/task.md before adding the task to a cohort. "
        f"Everything under hidden/{facts.name}/ is hidden acceptance material: never hand it to "
        "a harness.",
        "",
        f"- Pull request: #{facts.number} {json.dumps(one_line(facts.pr_title, 200))}, merged as "
        f"{facts.merge_commit}",
        f"- Base commit: {facts.base.commit}",
        f"- Base rule: {facts.base.rule}",
        f"- Linked issue: #{facts.issue_number} (live state: {facts.issue_state or 'unknown'}; "
        "issue.json freezes it as OPEN, as the issue was when work began)",
        f"- Task source: {facts.task_source} (the issue's current body; no body history)",
        f"- Initial failure at base: {facts.initial_failure}",
    ]
    for nodeid in facts.failing_at_base:
        lines.append(f"  - failing: {nodeid}")
    if facts.identifiers:
        lines.append("  - identifiers the hidden tests need: " + ", ".join(facts.identifiers))
    for detail in facts.other_errors:
        lines.append(f"  - other collection errors at base: {one_line(detail, 300)}")
    lines += [
        "- Hidden tests (pytest node ids, all passing at the merge commit):",
        *(f"  - {nodeid}" for nodeid in facts.nodeids),
        f"- Import: {facts.layout.describe()}; every run of the tests, here and in each view "
        "of an attempt, imports the tree's own code",
        "  - the project's top-level names, each checked to come from the tree whenever a run "
        "here imported it: " + (", ".join(facts.layout.names) or "(none found)"),
        f"- Test runs: {sandbox}",
        "",
        "## Hidden artifacts",
        "",
        "| file | sha256 |",
        "|---|---|",
        *(f"| {path} | {sha} |" for path, sha in pins),
        "",
        "## Plan",
        "",
        "- allowedFiles: " + ", ".join(facts.allowed_files),
        "- originalCheckFiles and candidateTestFiles: " + ", ".join(facts.test_paths),
        "- requireInitialFailure: true",
        f"- checks: pytest ({shlex.join(check_argv(facts))}); hidden acceptance runs first",
        "",
    ]
    return "\n".join(lines)


def cohort_stub(tasks: Sequence[tuple[str, str]], source: str | None) -> dict[str, Any]:
    """The cohort skeleton: add two variants and a hypothesis, drop `source`, save as
    cohort.json in the same directory, and pass `--source <out>/source`."""
    document: dict[str, Any] = {
        "schemaVersion": 1,
        "hypothesis": "",
        "primaryOutcome": "hiddenAcceptancePassRate",
        "variants": [],
        "tasks": [
            {"name": name, "plan": f"hidden/{name}/plan.json", "planSha256": sha}
            for name, sha in tasks
        ],
        "repetitions": 1,
    }
    if source is not None:
        document["source"] = source
    return document
