"""`forge evaluate replay` on a real project with merged PRs of every shape, read through forge
health's shim from the stateful fake gh (issue #18: replay tasks)."""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from forge.attempt.plan import decode_issue, decode_plan

from .kit import INTERPRETER_MOUNTS, git
from .replay_kit import CALC, Project, run_oracle_cohort

TEST_ADD = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TEST_MORE = "from calc import mul\n\n\ndef test_more():\n    assert mul(1, 1)\n"
CALC_FIXED = CALC.replace("a - b", "a + b")
MUL3 = '''

SCALE = 3
HANDLERS = {"a": lambda x: x}


def mul3(a: int, b: int, c: int) -> int:
    """Three at once."""
    return a * b * c


class Meter:
    """Counts."""

    unit: str = "m"

    def __init__(self, start: int = 0) -> None:
        self.value = start

    def read(self) -> int:
        return self.value
'''
TEST_MUL3 = """import calc
from calc import Meter, mul, mul3


def test_mul3():
    assert mul3(1, 2, 3) == 6 == mul(2, 3)


class TestMeter:
    def test_read(self):
        assert Meter(4).read() == 4 and calc.SCALE == 3 and calc.HANDLERS
"""


@dataclass
class Built:
    project: Project
    out: Path
    result: subprocess.CompletedProcess[str]

    def skipped(self) -> dict[int, str]:
        document = json.loads((self.out / "skipped.json").read_text())
        return {item["pr"]: item["reason"] for item in document["skipped"]}


def build_project(root: Path) -> Project:
    p = Project(root)
    p.issue(1, "add subtracts", "add(2, 3) gives -1 instead of 5.")
    p.pr(
        2,
        {"calc.py": CALC_FIXED, "tests/test_add.py": TEST_ADD},
        title="Fix add",
        body="Closes #1",
    )
    p.issue(3, "Need mul3 and a Meter", "Multiply three numbers; count with a Meter.")
    p.pr(
        4,
        {"calc.py": CALC_FIXED + MUL3, "tests/test_mul3.py": TEST_MUL3},
        title="Add mul3",
        body="Implements it.\n\nFixes #3",
        kind="merge",
        main_moves={"README": "widget, moved on\n"},
    )
    p.issue(5, "more tests", "cover mul")
    p.pr(
        6,
        {"tests/test_more.py": TEST_MORE},
        title="More tests (#5)",
    )
    p.issue(7, "broken", "still broken")
    p.pr(
        8,
        {"tests/test_never.py": "def test_never():\n    assert False\n"},
        title="A test that never passes",
        body="Closes #7",
    )
    p.issue(9, "linked", "a symlinked test")
    p.pr(
        10,
        {},
        title="Link a test",
        body="Closes #9",
        symlinks={"tests/test_link.py": "test_calc.py"},
    )
    p.issue(11, "big", "a big change")
    many = {f"pkg/m{i:02d}.py": f"X = {i}\n" for i in range(30)}
    p.pr(12, {**many, "tests/test_big.py": TEST_ADD}, title="Big", body="Closes #11")
    p.pr(13, {"tests/test_tidy.py": TEST_ADD}, title="Tidy", body="no reference here")
    p.pr(14, {"tests/test_ref.py": TEST_ADD}, title="Refers to a PR", body="Closes #2")
    p.issue(15, "docs", "docs")
    p.pr(16, {"README": "docs only\n"}, title="Docs", body="Closes #15")
    p.issue(17, "util", "util is broken")
    p.write({"util.py": "raise RuntimeError('util is broken at base')\n"})
    p.commit("main: a broken util")
    p.pr(
        18,
        {
            "util.py": "def ok():\n    return True\n",
            "tests/test_util.py": "from util import ok\n\n\ndef test_ok():\n    assert ok()\n",
        },
        title="Fix util",
        body="Closes #17",
    )
    p.issue(19, "missing", "the merge commit is not in the checkout")
    p.pr(21, {"tests/test_gone.py": TEST_ADD}, title="Gone", body="Closes #19")
    p.repo_state()["pulls"]["21"]["merge_commit_sha"] = "0" * 40
    p.save()
    p.fail("api * repos/acme/widget/pulls/20", "503")
    return p


PRS = (2, 4, 6, 8, 10, 12, 13, 14, 16, 18, 20, 21)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("replay")
    project = build_project(root)
    out = root / "out"
    return Built(project, out, project.replay(out, *PRS))


def test_each_pr_is_built_or_skipped_with_the_seeds_reason(built: Built) -> None:
    assert built.result.returncode == 0, built.result.stderr
    assert "pr-2: built\npr-4: built\n" in built.result.stdout
    skipped = built.skipped()
    assert sorted(skipped) == [6, 8, 10, 12, 13, 14, 16, 18, 20, 21]
    assert skipped[6].startswith("initial failure does not reproduce")
    assert skipped[8].startswith("hidden tests do not pass at the merge commit")
    assert "tests/test_never.py::test_never" in skipped[8]
    assert skipped[10] == "symlinked test file: tests/test_link.py"
    assert skipped[12] == "more than 25 changed files (31)"
    assert skipped[13].startswith("no linked issue")
    assert skipped[14] == "infrastructure: the linked reference #2 is a pull request"
    assert skipped[16].startswith("no test changes")
    assert skipped[18] == "build failed at base: RuntimeError: util is broken at base"
    assert skipped[20].startswith("infrastructure: gh api repos/acme/widget/pulls/20: server:")
    assert skipped[21] == f"infrastructure: merge commit {'0' * 40} is not in --source (fetch it)"
    stub = json.loads((built.out / "cohort.stub.json").read_text())
    assert [t["name"] for t in stub["tasks"]] == ["pr-2", "pr-4"]
    assert stub["source"] == str(built.out / "source")
    for task in stub["tasks"]:
        plan = (built.out / task["plan"]).read_bytes()
        assert hashlib.sha256(plan).hexdigest() == task["planSha256"]
    assert sorted(p.name for p in built.out.iterdir()) == [
        "cohort.stub.json",
        "hidden",
        "skipped.json",
        "source",
        "tasks",
    ]


def test_reads_are_read_only_gh_api_calls_through_the_health_shim(built: Built) -> None:
    calls = built.project.gh_calls()
    assert calls
    assert all(argv[0] == "api" for argv in calls)
    assert not any("-X" in argv or "--method" in argv for argv in calls)
    endpoints = {argv[-1] for argv in calls}
    assert "repos/acme/widget/pulls/4/files?per_page=100" in endpoints
    assert "repos/acme/widget/issues/3" in endpoints
    observations = Path(built.project.env["FORGE_HOME"]) / "forge" / "observations.log"
    signals = [line.split("\t")[3] for line in observations.read_text().splitlines()]
    assert "ok" in signals
    assert "server" in signals


def test_hidden_material_stays_apart_from_what_a_reviewer_reads(built: Built) -> None:
    tasks = built.out / "tasks" / "pr-2"
    assert sorted(p.name for p in tasks.iterdir()) == ["approval.md", "task.md"]
    hidden = built.out / "hidden" / "pr-2"
    for page in tasks.iterdir():
        assert "assert add(2, 3) == 5" not in page.read_text()
    approval = (tasks / "approval.md").read_text()
    files = sorted(p for p in hidden.rglob("*") if p.is_file())
    assert [p.relative_to(hidden).as_posix() for p in files] == [
        "acceptance.sh",
        "files/tests/test_add.py",
        "issue.json",
        "plan.json",
    ]
    for path in files:
        rel = path.relative_to(built.out).as_posix()
        assert f"| {rel} | {hashlib.sha256(path.read_bytes()).hexdigest()} |" in approval
    assert (hidden / "files/tests/test_add.py").read_text() == TEST_ADD
    merge = built.project.merged[2].merge
    assert f"merged as {merge}" in approval
    assert f"Base commit: {git(built.project.repo, 'rev-parse', merge + '^1')}" in approval
    assert "baseCommit = merge^1" in approval
    assert "live state: closed" in approval
    assert "Initial failure at base: test-failure" in approval
    assert "failing: tests/test_add.py::test_add" in approval
    assert "add(2, 3) gives -1 instead of 5." in (tasks / "task.md").read_text()


def test_the_plan_and_issue_are_frozen_inputs_the_cohort_decoders_accept(built: Built) -> None:

    hidden = built.out / "hidden" / "pr-2"
    plan = decode_plan((hidden / "plan.json").read_bytes(), file="plan.json")
    assert plan.base_commit == git(
        built.project.repo, "rev-parse", built.project.merged[2].merge + "^1"
    )
    assert plan.allowed_files == ("calc.py", "tests/test_add.py")
    assert plan.original_check_files == plan.candidate_test_files == ("tests/test_add.py",)
    assert plan.require_initial_failure is True
    assert plan.checks[0].argv == (str(built.project.python), "-m", "pytest", "-q")
    issue = json.loads((hidden / "issue.json").read_text())
    assert issue == {
        "title": "add subtracts",
        "body": "add(2, 3) gives -1 instead of 5.",
        "state": "OPEN",
    }
    assert decode_issue((hidden / "issue.json").read_bytes(), file="issue.json").title


def test_a_test_compile_task_carries_the_interface_contract(built: Built) -> None:
    project = built.project
    approval = (built.out / "tasks" / "pr-4" / "approval.md").read_text()
    fork = git(
        project.repo, "merge-base", project.merged[4].merge + "^1", project.merged[4].merge + "^2"
    )
    assert f"Base commit: {fork}" in approval
    assert fork != git(project.repo, "rev-parse", project.merged[4].merge + "^1")
    assert "baseCommit = merge-base(merge^1, merge^2)" in approval
    assert "Initial failure at base: test-compile" in approval
    assert (
        "identifiers the hidden tests need: calc.HANDLERS, calc.Meter, calc.SCALE, calc.mul3"
        in approval
    )
    assert "Task source: current-issue-body+interface-contract" in approval
    body = json.loads((built.out / "hidden" / "pr-4" / "issue.json").read_text())["body"]
    contract = body.split("## Interface contract (from the merged change)\n\n", 1)[1]
    assert contract == (
        "```python\n"
        "# module calc (calc.py)\n"
        "HANDLERS = ...\n"
        "class Meter:\n"
        "    unit: str = 'm'\n"
        "    def __init__(self, start: int=0) -> None: ...\n"
        "    def read(self) -> int: ...\n"
        "SCALE = 3\n"
        "def mul3(a: int, b: int, c: int) -> int: ...\n"
        "```\n"
    )
    assert body.startswith("Multiply three numbers; count with a Meter.\n\n## Interface")
    task = (built.out / "tasks" / "pr-4" / "task.md").read_text()
    assert "def mul3(a: int, b: int, c: int) -> int: ..." in task
    nodeids = ["tests/test_mul3.py::TestMeter", "tests/test_mul3.py::test_mul3"]
    assert all(f"  - {n}" in approval for n in nodeids)


def test_acceptance_fails_at_base_passes_at_merge_and_never_touches_the_tree(
    built: Built, tmp_path: Path
) -> None:
    project = built.project
    script = built.out / "hidden" / "pr-4" / "acceptance.sh"
    for commit, expected in ((project.merged[4].merge + "^1", 1), (project.merged[4].merge, 0)):
        tree = tmp_path / f"tree-{expected}"
        git(project.repo, "worktree", "add", "-q", "--detach", str(tree), commit)
        try:
            run = subprocess.run(
                [str(script)],
                cwd=tree,
                capture_output=True,
                text=True,
                env={"PATH": project.env["PATH"], "TMPDIR": str(tmp_path)},
                check=False,
                timeout=120,
            )
            assert (run.returncode != 0) == bool(expected), run.stdout + run.stderr
            assert git(tree, "status", "--porcelain") == ""
        finally:
            git(project.repo, "worktree", "remove", "--force", str(tree))
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_source_checkout_holds_only_base_commits(built: Built) -> None:
    source = built.out / "source"
    project = built.project
    bases = [git(project.repo, "rev-parse", project.merged[2].merge + "^1")]
    bases.append(
        git(
            project.repo,
            "merge-base",
            project.merged[4].merge + "^1",
            project.merged[4].merge + "^2",
        )
    )
    assert sorted(git(source, "rev-list", "--all").split()) == sorted(set(bases))
    # PR 4 forked from PR 2's merge commit: that commit is PR 4's base, as the seed notes (each
    # cohort attempt gets a source of its own base only). PR 4's own merge commit is absent.
    assert bases[1] == project.merged[2].merge
    missing = subprocess.run(
        ["git", "-C", str(source), "cat-file", "-e", project.merged[4].merge],
        capture_output=True,
        check=False,
    )
    assert missing.returncode != 0
    assert git(source, "for-each-ref", "--format=%(refname)").split() == [
        "refs/replay/pr-2",
        "refs/replay/pr-4",
    ]
    assert git(source, "rev-parse", "HEAD") == bases[0]
    symbolic = subprocess.run(["git", "-C", str(source), "symbolic-ref", "-q", "HEAD"], check=False)
    assert symbolic.returncode == 1
    assert git(source, "status", "--porcelain") == ""
    assert git(source, "remote", "get-url", "origin") == "https://github.com/acme/widget.git"
    assert git(source, "config", "remote.origin.fetch") == "+refs/forge-none/*:refs/forge-none/*"
    assert not (source / ".git" / "FETCH_HEAD").exists()
    assert (source / ".git" / "shallow").exists()


def test_a_cohort_built_from_the_stub_runs_end_to_end(
    built: Built, tmp_path: Path, forge_dirs: dict[str, Path]
) -> None:
    """Two variants over the replayed tasks: the one that writes the merged code is correct on
    both, the one that changes nothing on neither; no attempt sees its task's merge commit."""
    del forge_dirs
    project = built.project
    answers = {
        "add subtracts": {"calc.py": CALC_FIXED},
        "Need mul3 and a Meter": {"calc.py": CALC_FIXED + MUL3},
    }
    # the project's interpreter lives in a /tmp the sandbox makes private
    mounts = [*INTERPRETER_MOUNTS.get("mounts", []), str(project.python.parent)]
    done = run_oracle_cohort(
        built.out,
        tmp_path,
        answers,
        mounts,
        "the oracle solves replayed tasks",
        preview_says="plan-has-protected-exemptions: tests/test_add.py",
    )
    assert done.run.returncode == 2, done.run.stderr
    by_variant = done.variants()
    assert by_variant["oracle"]["correct"] == 2, done.report_md()
    assert by_variant["oracle"]["hiddenAcceptancePass"] == 2
    assert by_variant["idle"]["hiddenAcceptancePass"] == 0
    probes = done.probes()
    assert len(probes) == 4
    merges = {
        "add subtracts": project.merged[2].merge,
        "Need mul3 and a Meter": project.merged[4].merge,
    }
    for probe in probes:
        assert merges[probe["title"]] not in probe["revList"]
        assert len(probe["revList"]) == 1
