"""`forge evaluate replay` on the layouts real projects use (issue #41): a `src/` layout, a flat
one, and one whose package folder only its setup.py names. Each is real git history with a real
fix, and each is also installed, at HEAD, in the `--python` environment, the way a developer's
virtualenv holds it: the src and lib projects editable (the `.pth` line setuptools, hatchling,
flit and pdm write for a package folder), the flat one as a copy in site-packages. HEAD holds
the fix, so a run that imports the installed copy instead of the tree finds no failure at base.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from forge.attempt.plan import decode_plan
from forge.attempt.regression import rerun_argv

from .kit import INTERPRETER_MOUNTS, git
from .replay_kit import CALC, Project, run_oracle_cohort, write_exec

CALC_FIXED = CALC.replace("a - b", "a + b")
SRC_INIT = "from widget.calc import add, mul\n"
SRC_TEST_MUL = "from widget import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
SRC_TEST_ADD = "from widget import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
MUL3 = "\n\ndef mul3(a: int, b: int, c: int) -> int:\n    return a * b * c\n"
SRC_TEST_MUL3 = (
    "from widget.calc import mul3\n\n\ndef test_mul3():\n    assert mul3(1, 2, 3) == 6\n"
)
TEST_ADD_ID = "tests/test_add.py::test_add"
FLAT_TEST_ADD = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
LIB_SETUP = (
    "from setuptools import setup\n\n"
    "setup(name='gadget', version='0', package_dir={'': 'lib'}, packages=['gadget'])\n"
)
LIB_TEST_ADD = "from gadget import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


@dataclass
class Layouts:
    root: Path
    python: Path
    """The project interpreter: a real virtualenv holding pytest and the three HEAD installs."""
    bare_python: Path
    """An interpreter with pytest and none of the projects installed."""
    src: Project
    flat: Project
    lib: Project
    heads: dict[str, Path]
    """Each project's developer checkout at HEAD, the one its installed copy comes from."""
    outs: dict[str, tuple[Path, dict[int, str]]] = field(default_factory=dict)

    def replay(self, name: str, *prs: int) -> tuple[Path, dict[int, str]]:
        """`--out` and the skips of replaying `prs` of project `name` (once per module)."""
        if name not in self.outs:
            out = self.root / f"out-{name}"
            result = getattr(self, name).replay(out, *prs)
            assert result.returncode == 0, result.stderr
            skipped = json.loads((out / "skipped.json").read_text())["skipped"]
            self.outs[name] = (out, {item["pr"]: item["reason"] for item in skipped})
        return self.outs[name]


def src_project(root: Path) -> Project:
    p = Project(root)
    p.write(
        {
            "pyproject.toml": "[project]\nname = 'widget'\nversion = '0'\n",
            "calc.py": None,
            "tests/test_calc.py": None,
            "src/widget/__init__.py": SRC_INIT,
            "src/widget/calc.py": CALC,
            "tests/test_mul.py": SRC_TEST_MUL,
        }
    )
    p.commit("src layout")
    p.issue(1, "add subtracts", "add(2, 3) gives -1 instead of 5.")
    p.pr(
        2,
        {"src/widget/calc.py": CALC_FIXED, "tests/test_add.py": SRC_TEST_ADD},
        title="Fix add",
        body="Closes #1",
    )
    p.issue(3, "Need mul3", "Multiply three numbers.")
    p.pr(
        4,
        {"src/widget/calc.py": CALC_FIXED + MUL3, "tests/test_mul3.py": SRC_TEST_MUL3},
        title="Add mul3",
        body="Fixes #3",
        kind="merge",
        main_moves={"README": "widget, moved on\n"},
    )
    return p


def flat_project(root: Path) -> Project:
    p = Project(root)
    p.write({"pyproject.toml": "[project]\nname = 'flatcalc'\nversion = '0'\n"})
    p.commit("name the project")
    p.issue(1, "add subtracts", "add(2, 3) gives -1 instead of 5.")
    p.pr(
        2,
        {"calc.py": CALC_FIXED, "tests/test_add.py": FLAT_TEST_ADD},
        title="Fix add",
        body="Closes #1",
    )
    return p


def lib_project(root: Path) -> Project:
    """A package folder only setup.py names (replay never runs setup.py, so it cannot tell)."""
    p = Project(root)
    p.write(
        {
            "pyproject.toml": None,
            "setup.py": LIB_SETUP,
            "calc.py": None,
            "tests/test_calc.py": None,
            "lib/gadget/__init__.py": "from gadget.calc import add\n",
            "lib/gadget/calc.py": CALC,
        }
    )
    p.commit("lib layout")
    p.issue(1, "add subtracts", "add(2, 3) gives -1 instead of 5.")
    p.pr(
        2,
        {"lib/gadget/calc.py": CALC_FIXED, "tests/test_add.py": LIB_TEST_ADD},
        title="Fix add",
        body="Closes #1",
    )
    return p


def project_venv(root: Path, heads: dict[str, Path]) -> Path:
    """A virtualenv that sees this interpreter's packages (pytest) and has the projects at HEAD:
    src and lib editable (a `.pth` naming the checkout's package folder), flat copied in."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "dev-tools.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (site / "__editable__.widget-0.pth").write_text(f"{heads['src'] / 'src'}\n")
    (site / "__editable__.gadget-0.pth").write_text(f"{heads['lib'] / 'lib'}\n")
    shutil.copy(heads["flat"] / "calc.py", site / "calc.py")
    return write_exec(
        root / "bin" / "py",
        f'#!/bin/sh\nPYTEST_DISABLE_PLUGIN_AUTOLOAD=1 exec {venv / "bin" / "python"} "$@"\n',
    )


@pytest.fixture(scope="module")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> Layouts:
    root = tmp_path_factory.mktemp("layouts")
    projects = {
        "src": src_project(root / "src"),
        "flat": flat_project(root / "flat"),
        "lib": lib_project(root / "lib"),
    }
    heads = {}
    for name, project in projects.items():
        heads[name] = root / "checkouts" / name
        git(root, "clone", "-q", str(project.repo), str(heads[name]))
    bare_python = projects["src"].python
    python = project_venv(root, heads)
    for project in projects.values():
        project.python = python
    return Layouts(
        root, python, bare_python, projects["src"], projects["flat"], projects["lib"], heads
    )


def installed(layouts: Layouts, module: str, cwd: Path) -> str:
    """Where the project interpreter imports `module` from, run as pytest runs (`-m`, cwd)."""
    code = f"import {module}, os; print(os.path.realpath({module}.__file__))"
    return subprocess.run(
        [str(layouts.python), "-c", code], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_environment_really_holds_the_head_copies(layouts: Layouts) -> None:
    """The premise: outside the trees, each project imports from its HEAD checkout or
    site-packages, and that copy has the fix."""
    elsewhere = layouts.root
    assert installed(layouts, "widget", elsewhere).startswith(f"{layouts.heads['src']}/src/")
    assert installed(layouts, "gadget", elsewhere).startswith(f"{layouts.heads['lib']}/lib/")
    assert "/site-packages/calc.py" in installed(layouts, "calc", elsewhere)
    assert "a + b" in (layouts.heads["src"] / "src/widget/calc.py").read_text()


def test_a_src_layout_builds_both_tasks_with_the_worktree_under_test(layouts: Layouts) -> None:
    out, skipped = layouts.replay("src", 2, 4)
    assert skipped == {}
    approval = (out / "tasks" / "pr-2" / "approval.md").read_text()
    assert "Initial failure at base: test-failure" in approval
    assert "failing: tests/test_add.py::test_add" in approval
    assert "src layout (src/ holds Python code): PYTHONPATH=<tree>/src" in approval
    assert "whenever a run here imported it: widget\n" in approval
    compile_approval = (out / "tasks" / "pr-4" / "approval.md").read_text()
    assert "Initial failure at base: test-compile" in compile_approval
    assert "identifiers the hidden tests need: widget.calc.mul3" in compile_approval
    plan = decode_plan((out / "hidden" / "pr-2" / "plan.json").read_bytes(), file="plan.json")
    assert plan.checks[0].argv == (
        "sh",
        "-c",
        'PYTHONPATH="$PWD"/src exec "$@"',
        "sh",
        str(layouts.python),
        "-m",
        "pytest",
        "-q",
    )


def test_a_src_layout_builds_with_no_install_at_all(layouts: Layouts) -> None:
    """The first symptom of the issue: nothing installed, `No module named 'widget'` at base."""
    out = layouts.root / "out-src-bare"
    result = layouts.src.replay(out, 2, python=layouts.bare_python)
    assert result.returncode == 0, result.stderr
    assert "pr-2: built" in result.stdout, result.stdout
    approval = (out / "tasks" / "pr-2" / "approval.md").read_text()
    assert "failing: tests/test_add.py::test_add" in approval


def test_the_src_tasks_files_judge_the_tree_not_the_installed_copy(
    layouts: Layouts, tmp_path: Path
) -> None:
    """acceptance.sh, the plan's check and the Lab's re-run of one failed test from it, each run
    in a checkout at a path of its own: at base all fail on the tree's own add (the installed
    copy adds), at the merge commit all pass."""
    out, _ = layouts.replay("src", 2, 4)
    project = layouts.src
    plan = json.loads((out / "hidden" / "pr-2" / "plan.json").read_text())
    env = {"PATH": project.env["PATH"], "TMPDIR": str(tmp_path)}
    merge = project.merged[2].merge
    for commit, status in ((f"{merge}^1", 1), (merge, 0)):
        tree = tmp_path / f"view-{status}"
        git(project.repo, "worktree", "add", "-q", "--detach", str(tree), commit)
        try:
            acceptance = run_in(tree, [str(out / "hidden" / "pr-2" / "acceptance.sh")], env)
            (tree / "tests" / "test_add.py").write_text(SRC_TEST_ADD)
            check = run_in(tree, plan["checks"][0]["argv"], env)
            rerun = run_in(tree, [*rerun_argv(plan["checks"][0]["argv"], TEST_ADD_ID)], env)
        finally:
            git(project.repo, "worktree", "remove", "--force", str(tree))
        for run in (acceptance, check, rerun):
            assert run.returncode == status, run.stdout + run.stderr
            assert ("assert -1 == 5" in run.stdout) == bool(status), run.stdout


def run_in(tree: Path, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=tree, capture_output=True, text=True, env=env, check=False, timeout=120
    )


def test_a_flat_layout_builds_its_task_with_the_worktree_under_test(layouts: Layouts) -> None:
    out, skipped = layouts.replay("flat", 2)
    assert skipped == {}
    approval = (out / "tasks" / "pr-2" / "approval.md").read_text()
    assert "Initial failure at base: test-failure" in approval
    assert "flat layout" in approval
    plan = json.loads((out / "hidden" / "pr-2" / "plan.json").read_text())
    assert plan["checks"][0]["argv"] == [str(layouts.python), "-m", "pytest", "-q"]


def test_an_installed_copy_that_still_wins_is_the_skip_reason(layouts: Layouts) -> None:
    """A package folder no configuration replay reads names: the tests import the installed
    HEAD copy, and the skip says so instead of `initial failure does not reproduce`."""
    _, skipped = layouts.replay("lib", 2)
    where = layouts.heads["lib"] / "lib" / "gadget" / "__init__.py"
    assert skipped[2].startswith(
        "code under test is not the worktree's at base: the tests imported gadget from "
        f"{os.path.realpath(where)}, outside the worktree"
    ), skipped[2]


def test_a_cohort_over_src_tasks_runs_sealed_with_the_worktree_under_test(
    layouts: Layouts, tmp_path: Path, forge_dirs: dict[str, Path]
) -> None:
    """The replayed src-layout tasks in the Lab's sandboxed views, with the installed HEAD copy
    visible inside (its checkout mounted): the recipe that writes the fix is correct on both, the
    one that changes nothing is accepted on neither (the installed copy would accept it)."""
    del forge_dirs
    cohort_dir, skipped = layouts.replay("src", 2, 4)
    assert skipped == {}
    answers = {
        "add subtracts": {"src/widget/calc.py": CALC_FIXED},
        "Need mul3": {"src/widget/calc.py": CALC_FIXED + MUL3},
    }
    mounts = [
        *INTERPRETER_MOUNTS.get("mounts", []),
        str(layouts.python.parent),
        str(layouts.root / "venv"),
        str(layouts.heads["src"]),
    ]
    done = run_oracle_cohort(
        cohort_dir, tmp_path, answers, mounts, "the oracle solves src-layout tasks"
    )
    assert done.run.returncode == 2, done.run.stderr
    assert "not sandboxed" not in done.run.stderr
    by_variant = done.variants()
    report_md = done.report_md()
    assert by_variant["oracle"]["correct"] == 2, report_md
    assert by_variant["oracle"]["hiddenAcceptancePass"] == 2, report_md
    assert by_variant["idle"]["hiddenAcceptancePass"] == 0, report_md
