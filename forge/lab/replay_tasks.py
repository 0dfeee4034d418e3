"""`forge evaluate replay`: frozen evaluation tasks built from a project's own merged PRs.

For each PR: read it and its linked issue through `gh api` (read-only), compute the base commit
from the merge commit's parents in `--source`, prove the PR's own tests fail at base (a test
failure, or a collection error naming identifiers the PR adds: then an interface contract) and
pass at the merge commit, and write `hidden/pr-N/` (plan, issue, acceptance, raw tests) apart from
`tasks/pr-N/` (what a person reviews). A PR that does not qualify is skipped with its reason in
`skipped.json`; a per-PR failure never aborts the run. Then `<out>/source` (history-free) and
`cohort.stub.json`. Repository code runs only under a scrubbed environment in throwaway worktrees.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import stat
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge.attempt.checkouts import has_commit, list_files
from forge.attempt.command import MARKER_ENV, CommandResult, run_command
from forge.attempt.errors import LabRefusal
from forge.clock import SYSTEM_CLOCK, Clock
from forge.errors import PeerError, UserError
from forge.files import write_atomic
from forge.git import GitError, resolve_commit
from forge.lab.contract import MAX_CONTRACT_LINES, Reader, build_contract
from forge.lab.replay_files import (
    TaskFacts,
    acceptance_script,
    approval_markdown,
    cohort_stub,
    issue_document,
    plan_document,
    task_markdown,
)
from forge.lab.replay_git import (
    blob,
    drop_worktree,
    file_modes,
    history_free_source,
    merge_base,
    parents,
    scratch_repo,
    worktree,
)
from forge.lab.replay_github import GitHub, linked_issue_number
from forge.lab.replay_layout import NAMES_ENV, Layout, find_layout, foreign_imports, merged
from forge.lab.replay_pytest import (
    CONFTEST_FAILURE,
    EVENTS_ENV,
    PLUGIN_MODULE,
    PLUGIN_SOURCE,
    CollectError,
    RunEvents,
    diagnose,
    outcomes,
    parse_events,
    pytest_argv,
)
from forge.lab.replay_rules import (
    BaseRule,
    HiddenFile,
    allowed_files,
    defined_tests,
    hidden_test_files,
    merge_base_rule,
    metadata_skip,
    nodeids_too_long,
    project_skip,
    squash_rule,
)

RUN_TIMEOUT_MS = 600_000
RUN_OUTPUT_CAP = 8 * 1024 * 1024
REPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9_.-]+")
SANDBOX_NOTE = (
    "while building, a scrubbed environment (PATH, LANG, TMPDIR, a private HOME) in throwaway "
    "worktrees with hooks off, not sandboxed; an attempt runs the checks and acceptance in its "
    "sandboxed views (docs/lab.md, The seal)"
)
LAYOUT_MANIFESTS = ("pyproject.toml", "setup.cfg")
WORK_DIR = ".replay-work"


class Skipped(UserError):
    """A pull request the person named makes no task; the reason goes to skipped.json (it
    starts `infrastructure:` when forge, git or GitHub failed rather than the PR not qualifying).
    Caught for each PR: a skip never ends the run."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class ReplayOptions:
    repo: str
    prs: tuple[int, ...]
    source: Path
    out: Path
    python: str
    caller_env: dict[str, str]


@dataclass
class ReplayResult:
    built: list[tuple[str, str]] = field(default_factory=list)
    """(task name, plan sha256) in PR order."""
    skipped: list[dict[str, Any]] = field(default_factory=list)
    source_error: str | None = None
    test_run_ms: int = 0
    """Time spent inside the hidden tests' pytest runs."""
    gh_ms: int = 0
    """Time spent waiting for `gh api` answers."""


def check_options(repo: str, prs: list[str], out: Path) -> tuple[int, ...]:
    """Refuse a malformed repository, PR number list or a non-empty `--out`."""
    if REPO_RE.fullmatch(repo) is None:
        raise LabRefusal(f"--repo must be OWNER/REPO, got {repo!r}")
    if not prs:
        raise LabRefusal("evaluate replay needs at least one --pr N")
    numbers = []
    for text in prs:
        if not text.isdigit() or int(text) < 1:
            raise LabRefusal(f"--pr must be a pull request number, got {text!r}")
        if int(text) in numbers:
            raise LabRefusal(f"--pr {text} is given twice")
        numbers.append(int(text))
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise LabRefusal(f"--out {out} must be a new or empty directory")
    return tuple(numbers)


async def replay(options: ReplayOptions, *, clock: Clock = SYSTEM_CLOCK) -> ReplayResult:
    """Build every PR's task (or its skip), then `<out>/source`, skipped.json, the stub."""
    source = options.source.resolve()
    try:
        await resolve_commit(source, "HEAD")
    except (GitError, OSError):
        raise LabRefusal(f"--source {options.source} is not a git checkout") from None
    out = options.out.absolute()
    out.mkdir(parents=True, exist_ok=True)
    work = out / WORK_DIR
    result = ReplayResult()
    try:
        work.mkdir()
        builder = _Builder(options, source, out, work, clock, result)
        await scratch_repo(source, work / "repo")
        await asyncio.to_thread(builder.write_plugin)
        bases: list[tuple[str, str]] = []
        for number in options.prs:
            try:
                facts = await builder.build(number)
            except Skipped as skip:
                result.skipped.append({"pr": number, "reason": skip.reason})
                continue
            plan_sha = await asyncio.to_thread(_write_task, out, facts)
            result.built.append((facts.name, plan_sha))
            bases.append((facts.name, facts.base.commit))
        if bases:
            await _write_source(source, out, bases, options.repo, result)
        result.gh_ms = round(builder.github.elapsed_s * 1000)
    finally:
        await asyncio.to_thread(shutil.rmtree, work, True)
    tasks = result.built if result.source_error is None else []
    stub = cohort_stub(tasks, str(out / "source") if tasks else None)
    _write_json(out / "skipped.json", {"schemaVersion": 1, "skipped": result.skipped})
    _write_json(out / "cohort.stub.json", stub)
    return result


class _Builder:
    def __init__(
        self,
        options: ReplayOptions,
        source: Path,
        out: Path,
        work: Path,
        clock: Clock,
        result: ReplayResult,
    ) -> None:
        self.options = options
        self.source = source
        self.work = work
        self.clock = clock
        self.result = result
        self.scratch = work / "repo"
        self.github = GitHub(options.repo, env=options.caller_env, cwd=out)
        self.marker = f"replay-{uuid.uuid4().hex[:12]}"

    def write_plugin(self) -> None:
        plugins = self.work / "plugins"
        plugins.mkdir()
        (plugins / f"{PLUGIN_MODULE}.py").write_text(PLUGIN_SOURCE)
        (self.work / "home").mkdir()

    async def build(self, number: int) -> TaskFacts:
        try:
            return await self._build(number)
        except GitError as error:
            raise Skipped(f"infrastructure: git error: {error}") from None
        except PeerError as error:
            raise Skipped(f"infrastructure: {error}") from None
        except OSError as error:
            raise Skipped(f"infrastructure: {error}") from None
        except (ValueError, RecursionError) as error:
            # A per-PR failure never aborts the run: even a document forge cannot read is a skip.
            raise Skipped(f"infrastructure: internal error: {error!r}") from None

    async def _build(self, number: int) -> TaskFacts:
        pull = await self.github.pull_request(number)
        if not pull.merged or not pull.merge_commit:
            raise Skipped("infrastructure: the pull request is not merged")
        issue_number = linked_issue_number(pull.body, pull.title)
        reason = metadata_skip(pull, issue_number)
        if reason is not None:
            raise Skipped(reason)
        assert issue_number is not None
        issue = await self.github.issue(issue_number)
        if issue.is_pull_request:
            raise Skipped(f"infrastructure: the linked reference #{issue_number} is a pull request")
        merge = pull.merge_commit
        if not await has_commit(self.source, merge):
            raise Skipped(f"infrastructure: merge commit {merge} is not in --source (fetch it)")
        base = await self._base(merge)
        hidden = hidden_test_files(pull)
        paths = [h.path for h in hidden]
        merge_files = await self._check_merge_tree(merge, paths)
        layout = merged(
            await self._layout(base.commit, set(await list_files(self.source, base.commit))),
            await self._layout(merge, merge_files),
        )
        hidden_bytes = {path: await blob(self.source, merge, path) for path in paths}
        nodeids = self._nodeids(hidden_bytes)
        folder = self.work / f"pr-{number}"
        base_tree, merge_tree = folder / "base", folder / "merge"
        try:
            await worktree(self.scratch, base_tree, base.commit)
            await asyncio.to_thread(_apply_hidden, base_tree, hidden_bytes, hidden)
            await worktree(self.scratch, merge_tree, merge)
            initial = await self._initial_failure(
                base_tree, merge_tree, hidden_bytes, nodeids, layout
            )
            await self._passes_at_merge(merge_tree, nodeids, layout)
        finally:
            for tree in (base_tree, merge_tree):
                await drop_worktree(self.scratch, tree)
        return TaskFacts(
            repo=self.options.repo,
            number=number,
            pr_title=pull.title,
            merge_commit=merge,
            base=base,
            issue_number=issue_number,
            issue_title=issue.title,
            issue_body=issue.body,
            issue_state=issue.state,
            allowed_files=allowed_files(pull),
            hidden=hidden,
            hidden_bytes=hidden_bytes,
            nodeids=tuple(nodeids),
            python=self.options.python,
            layout=layout,
            **initial,
        )

    async def _base(self, merge: str) -> BaseRule:
        found = await parents(self.source, merge)
        if len(found) == 1:
            return squash_rule(found[0])
        if len(found) == 2:
            return merge_base_rule(await merge_base(self.source, found[0], found[1]))
        raise Skipped(f"infrastructure: merge commit {merge} has {len(found)} parents")

    async def _layout(self, commit: str, files: set[str]) -> Layout:
        manifests = {
            name: await blob(self.source, commit, name)
            for name in LAYOUT_MANIFESTS
            if name in files
        }
        return find_layout(files, manifests.get)

    async def _check_merge_tree(self, merge: str, paths: list[str]) -> set[str]:
        """The merge commit's files, once the hidden tests are proved usable there."""
        merge_files = set(await list_files(self.source, merge))
        absent = [path for path in paths if path not in merge_files]
        if absent:
            raise Skipped(f"infrastructure: {absent[0]} is not in the merge commit")
        reason = project_skip(paths, merge_files)
        if reason is not None:
            raise Skipped(reason)
        modes = await file_modes(self.source, merge, paths)
        for path in paths:
            if modes.get(path) == "120000":
                raise Skipped(f"symlinked test file: {path}")
            if modes.get(path) not in ("100644", "100755"):
                raise Skipped(f"infrastructure: {path} is not a regular file at the merge commit")
        return merge_files

    def _nodeids(self, hidden_bytes: dict[str, bytes]) -> list[str]:
        nodeids: list[str] = []
        for path, data in sorted(hidden_bytes.items()):
            try:
                nodeids += defined_tests(path, data)
            except (SyntaxError, ValueError) as error:
                reason = f"infrastructure: hidden test {path} does not parse: {error}"
                raise Skipped(reason) from None
        if not nodeids:
            raise Skipped("hidden tests define no tests")
        if nodeids_too_long(nodeids):
            raise Skipped("hidden test node ids too long")
        return nodeids

    async def _pytest(
        self, tree: Path, nodeids: list[str], where: str, layout: Layout
    ) -> RunEvents:
        """Run only the hidden tests in `tree` under the layout's path rule; refuse an incomplete
        run, a missing pytest, or a run whose project modules did not come from `tree`."""
        events_file = tree.parent / f"{where}-events.jsonl"
        paths = [layout.pythonpath(str(tree)), str(self.work / "plugins")]
        env = {
            "PATH": self.options.caller_env.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.work / "home"),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": ":".join(path for path in paths if path),
            EVENTS_ENV: str(events_file),
            NAMES_ENV: ",".join(layout.names),
            MARKER_ENV: self.marker,
        }
        for name in ("LANG", "TMPDIR"):
            if name in self.options.caller_env:
                env[name] = self.options.caller_env[name]
        result = await run_command(
            pytest_argv(self.options.python, nodeids, events=True),
            cwd=tree,
            env=env,
            timeout_s=RUN_TIMEOUT_MS / 1000,
            clock=self.clock,
            output_cap=RUN_OUTPUT_CAP,
        )
        self.result.test_run_ms += result.elapsed_ms
        text = events_file.read_text() if events_file.exists() else ""
        events = parse_events(text)
        _refuse_incomplete(result, events, where, self.options.python)
        real_tree = await asyncio.to_thread(os.path.realpath, tree)
        foreign = foreign_imports(events.imported, real_tree)
        if foreign:
            name, location = foreign[0]
            raise Skipped(
                f"code under test is not the worktree's at {where}: the tests imported {name} "
                f"from {location}, outside the worktree ({layout.describe()}); an installed "
                f"copy in {self.options.python}'s environment or a path the tests add comes first"
            )
        return events

    async def _initial_failure(
        self,
        base_tree: Path,
        merge_tree: Path,
        hidden_bytes: dict[str, bytes],
        nodeids: list[str],
        layout: Layout,
    ) -> dict[str, Any]:
        events = await self._pytest(base_tree, nodeids, "base", layout)
        if not events.collect_errors:
            failed = outcomes(events, nodeids).failed
            if not failed:
                raise Skipped(
                    "initial failure does not reproduce: no hidden test fails at base "
                    f"(pytest exit {events.exitstatus})"
                )
            return {"initial_failure": "test-failure", "failing_at_base": failed}
        hidden = sorted(hidden_bytes)
        diagnoses = [diagnose(e.text, hidden, str(base_tree)) for e in events.collect_errors]
        for diagnosis in diagnoses:
            if not diagnosis.in_test_code:
                raise Skipped(f"build failed at base: {diagnosis.detail}")
        missing = [d.missing for d in diagnoses if d.missing is not None]
        others = tuple(d.detail for d in diagnoses if d.missing is None)
        details = "; ".join(d.detail for d in diagnoses)
        if not missing:
            raise Skipped(f"build failed at base: {details}")
        contract = build_contract(
            hidden_bytes, missing, base=_reader(base_tree), merge=_reader(merge_tree)
        )
        if contract.resolved == 0:
            raise Skipped(f"build failed at base: no interface identifiers recognized: {details}")
        if contract.line_count() > MAX_CONTRACT_LINES:
            raise Skipped(
                f"interface contract too large ({contract.line_count()} lines, "
                f"at most {MAX_CONTRACT_LINES})"
            )
        return {
            "initial_failure": "test-compile",
            "contract": contract.render(),
            "identifiers": tuple(contract.identifiers),
            "other_errors": others,
        }

    async def _passes_at_merge(self, merge_tree: Path, nodeids: list[str], layout: Layout) -> None:
        events = await self._pytest(merge_tree, nodeids, "merge", layout)
        if events.collect_errors:
            detail = diagnose(events.collect_errors[0].text, [], str(merge_tree)).detail
            raise Skipped(f"hidden tests do not pass at the merge commit: {detail}")
        passed = set(outcomes(events, nodeids).passed)
        not_passing = [nodeid for nodeid in nodeids if nodeid not in passed]
        if not_passing or events.exitstatus != 0:
            named = ", ".join(not_passing[:5]) or f"pytest exit {events.exitstatus}"
            raise Skipped(f"hidden tests do not pass at the merge commit: {named}")


def _refuse_incomplete(result: CommandResult, events: RunEvents, where: str, python: str) -> None:
    """A missing toolchain or an incomplete run is its own skip, never a reproduced failure."""
    stderr = result.stderr.decode("utf-8", errors="replace")
    if result.start_error is not None:
        raise Skipped(f"toolchain missing: cannot start {python}: {result.start_error}")
    if result.timed_out:
        raise Skipped(f"incomplete run at {where}: timed out after {RUN_TIMEOUT_MS // 1000} s")
    if result.output_capped:
        raise Skipped(f"incomplete run at {where}: output over {RUN_OUTPUT_CAP} bytes")
    if events.exitstatus is not None:
        return
    if "No module named pytest" in stderr:
        raise Skipped(f"toolchain missing: pytest is not installed for {python}")
    conftest = CONFTEST_FAILURE.search(stderr)
    if conftest is not None:
        events.collect_errors.append(CollectError(conftest.group(1), stderr[conftest.start() :]))
        return
    raise Skipped(
        f"incomplete run at {where}: pytest ended without finishing (exit {result.exit_code})"
    )


def _apply_hidden(
    tree: Path, hidden_bytes: dict[str, bytes], hidden: tuple[HiddenFile, ...]
) -> None:
    """The hidden tests as of the merge commit, renamed-away old paths removed."""
    for item in hidden:
        if item.previous is not None:
            (tree / item.previous).unlink(missing_ok=True)
    for path, data in hidden_bytes.items():
        target = tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()
        target.write_bytes(data)


def _reader(tree: Path) -> Reader:
    def read(path: str) -> bytes | None:
        target = tree / path
        try:
            if not stat.S_ISREG(os.lstat(target).st_mode):
                return None
            return target.read_bytes()
        except OSError:
            return None

    return read


def _write_task(out: Path, facts: TaskFacts) -> str:
    """hidden/pr-N/ first (its hashes go into approval.md), then tasks/pr-N/; the plan's sha."""
    hidden = out / "hidden" / facts.name
    files: dict[str, bytes] = {
        "plan.json": _json_bytes(plan_document(facts)),
        "issue.json": _json_bytes(issue_document(facts)),
        "acceptance.sh": acceptance_script(facts).encode(),
    }
    for path, data in facts.hidden_bytes.items():
        files[f"files/{path}"] = data
    pins = []
    for rel, data in sorted(files.items()):
        target = hidden / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        pins.append((f"hidden/{facts.name}/{rel}", hashlib.sha256(data).hexdigest()))
    (hidden / "acceptance.sh").chmod(0o755)
    tasks = out / "tasks" / facts.name
    tasks.mkdir(parents=True)
    (tasks / "task.md").write_text(task_markdown(facts))
    (tasks / "approval.md").write_text(approval_markdown(facts, pins, sandbox=SANDBOX_NOTE))
    return hashlib.sha256(files["plan.json"]).hexdigest()


async def _write_source(
    source: Path, out: Path, bases: list[tuple[str, str]], repo: str, result: ReplayResult
) -> None:
    dest = out / "source"
    try:
        await history_free_source(source, dest, bases, f"https://github.com/{repo}.git")
    except (GitError, OSError) as error:
        result.source_error = str(error)
        await asyncio.to_thread(shutil.rmtree, dest, True)


def _json_bytes(document: dict[str, Any]) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def _write_json(path: Path, document: dict[str, Any]) -> None:
    write_atomic(path, _json_bytes(document))
