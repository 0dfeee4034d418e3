"""Replay's test kit: a small Python project with real merged pull requests of every shape, and
the stateful fake gh (tests/health/fake_gh) serving their REST records through forge health's
installed shim.

`Project` builds the repository commit by commit: each PR is a branch off `main`, merged either
by squash (one parent) or by a merge commit (two parents, after `main` moved on), and recorded in
the fake's state the way GitHub reports it (merge_commit_sha, base, body, changed files with
their line counts, computed by git from the real commits).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge.health.settings import Settings
from forge.health.shim_install import install

from .kit import git

FAKE_GH = Path(__file__).resolve().parents[1] / "health" / "fake_gh" / "fakegh.py"
REPO = "acme/widget"
CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST_CALC = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"


def write_exec(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@dataclass
class Merged:
    number: int
    merge: str
    head: str
    kind: str
    """`squash` or `merge`."""


@dataclass
class Project:
    root: Path
    repo: Path = field(init=False)
    env: dict[str, str] = field(init=False)
    python: Path = field(init=False)
    state: dict[str, Any] = field(init=False)
    merged: dict[int, Merged] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.repo = self.root / "proj"
        self.repo.mkdir(parents=True)
        realbin = self.root / "realbin"
        write_exec(realbin / "gh", f'#!/bin/sh\nexec {sys.executable} -I -S {FAKE_GH} "$@"\n')
        # The project's interpreter: this one, without the dev plugins (a run starts in 0.3 s).
        self.python = write_exec(
            self.root / "bin" / "py",
            f'#!/bin/sh\nPYTEST_DISABLE_PLUGIN_AUTOLOAD=1 exec {sys.executable} "$@"\n',
        )
        (self.root / "tmp").mkdir()
        self.env = {
            **os.environ,
            "PATH": f"{realbin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "FORGE_HOME": str(self.root / "forge-home"),
            "FAKEGH_STATE": str(self.root / "fake-state.json"),
            "FAKEGH_FAULTS": str(self.root / "fake-faults.json"),
            "FAKEGH_LOG": str(self.root / "fake-log.jsonl"),
            "TMPDIR": str(self.root / "tmp"),
        }
        self.shim = install(Settings.from_env(self.env))
        self.state = {"repos": {REPO: {"name": REPO, "issues": {}, "pulls": {}, "next": 1}}}
        self.write(
            {
                "pyproject.toml": "[project]\nname = 'widget'\nversion = '0'\n",
                "calc.py": CALC,
                "tests/test_calc.py": TEST_CALC,
                "README": "widget\n",
            }
        )
        git(self.repo, "init", "-q", "-b", "main")
        git(self.repo, "remote", "add", "origin", f"https://github.com/{REPO}.git")
        self.commit("initial")

    # -- git -----------------------------------------------------------------------------

    def write(self, files: dict[str, str | None]) -> None:
        for rel, text in files.items():
            path = self.repo / rel
            if text is None:
                path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def commit(self, message: str) -> str:
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-qm", message, "--allow-empty")
        return git(self.repo, "rev-parse", "HEAD")

    def head(self, ref: str = "HEAD") -> str:
        return git(self.repo, "rev-parse", ref)

    def pr(
        self,
        number: int,
        files: dict[str, str | None],
        *,
        title: str,
        body: str = "",
        kind: str = "squash",
        symlinks: dict[str, str] | None = None,
        main_moves: dict[str, str] | None = None,
    ) -> Merged:
        """A branch with `files`, merged into main as `kind`; recorded as PR `number`."""
        branch = f"pr-{number}"
        git(self.repo, "checkout", "-q", "-b", branch, "main")
        self.write(files)
        for link, target in (symlinks or {}).items():
            (self.repo / link).symlink_to(target)
        head = self.commit(title)
        git(self.repo, "checkout", "-q", "main")
        if main_moves:
            self.write(main_moves)
            self.commit(f"main moves on before #{number}")
        base_tip = self.head("main")
        if kind == "squash":
            git(self.repo, "merge", "-q", "--squash", branch)
            merge = self.commit(f"{title} (#{number})")
        else:
            git(self.repo, "merge", "-q", "--no-ff", "-m", f"Merge pull request #{number}", branch)
            merge = self.head()
        merged = Merged(number, merge, head, kind)
        self.merged[number] = merged
        self.record_pull(number, title, body, merged, base_tip)
        return merged

    # -- the forge's records -----------------------------------------------------------------

    def record_pull(self, number: int, title: str, body: str, merged: Merged, base: str) -> None:
        fork = git(self.repo, "merge-base", base, merged.head)
        status = {"A": "added", "M": "modified", "D": "removed", "T": "modified"}
        names = git(self.repo, "diff", "--name-status", "-M", fork, merged.head).splitlines()
        counts = {}
        for line in git(self.repo, "diff", "--numstat", "-M", fork, merged.head).splitlines():
            added, deleted, path = line.split("\t")
            counts[path.split(" => ")[-1]] = (int(added), int(deleted))
        files = []
        for line in names:
            parts = line.split("\t")
            entry: dict[str, Any] = {"filename": parts[-1]}
            if parts[0].startswith("R"):
                entry.update(status="renamed", previous_filename=parts[1])
            else:
                entry["status"] = status[parts[0]]
            added, deleted = counts.get(parts[-1], (0, 0))
            entry.update(additions=added, deletions=deleted, changes=added + deleted)
            files.append(entry)
        self.repo_state()["pulls"][str(number)] = {
            "number": number,
            "title": title,
            "body": body,
            "state": "closed",
            "merged": True,
            "merged_at": "2026-01-01T00:00:00Z",
            "merge_commit_sha": merged.merge,
            "base": {"sha": base, "ref": "main"},
            "head": {"sha": merged.head, "ref": f"pr-{number}"},
            "changed_files": len(files),
            "files": files,
        }
        self.save()

    def issue(self, number: int, title: str, body: str, state: str = "CLOSED") -> None:
        self.repo_state()["issues"][str(number)] = {
            "number": number,
            "title": title,
            "body": body,
            "state": state,
            "labels": [],
            "comments": [],
            "createdAt": "2026-01-01T00:00:00Z",
        }
        self.save()

    def repo_state(self) -> dict[str, Any]:
        repo: dict[str, Any] = self.state["repos"][REPO]
        return repo

    def save(self) -> None:
        Path(self.env["FAKEGH_STATE"]).write_text(json.dumps(self.state, indent=1))

    def fail(self, match: str, kind: str, times: int = -1) -> None:
        """A fault rule of the fake (see fakegh.py): `match` over the joined gh argv."""
        path = Path(self.env["FAKEGH_FAULTS"])
        rules = json.loads(path.read_text()) if path.exists() else []
        rules.append({"match": match, "kind": kind, "times": times})
        path.write_text(json.dumps(rules))

    def gh_calls(self) -> list[list[str]]:
        path = Path(self.env["FAKEGH_LOG"])
        if not path.exists():
            return []
        return [json.loads(line)["argv"] for line in path.read_text().splitlines()]

    # -- the verb ----------------------------------------------------------------------------

    def replay(
        self, out: Path, *prs: int, python: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`forge evaluate replay` of `prs` with `--python` the project's (or `python`)."""
        argv = [sys.executable, "-m", "forge.cli", "evaluate", "replay", "--repo", REPO]
        for number in prs:
            argv += ["--pr", str(number)]
        argv += ["--source", str(self.repo), "--out", str(out)]
        argv += ["--python", str(python or self.python)]
        return subprocess.run(
            argv, capture_output=True, text=True, env=self.env, timeout=300, check=False
        )


ORACLE = Path(__file__).resolve().parent / "oracle_harness.py"


@dataclass
class OracleRun:
    """What `run_oracle_cohort` saw: the approved run's process, its out folder and the
    oracle's probes (one per attempt that ran the oracle)."""

    run: subprocess.CompletedProcess[str]
    out: Path
    ctl: Path

    def variants(self) -> dict[str, dict[str, Any]]:
        report = json.loads((self.out / "report.json").read_text())
        return {variant["name"]: variant for variant in report["variants"]}

    def report_md(self) -> str:
        return (self.out / "report.md").read_text()

    def probes(self) -> list[dict[str, Any]]:
        lines = (self.ctl / "probes.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]


def run_oracle_cohort(
    cohort_dir: Path,
    work: Path,
    answers: dict[str, dict[str, str]],
    mounts: list[str],
    hypothesis: str,
    preview_says: str | None = None,
) -> OracleRun:
    """A cohort over replayed tasks (`cohort_dir` holds replay's stub and source) with two
    variants: `oracle` writes each task's answer (by issue title), `idle` changes nothing. The
    cohort is previewed (which must mention `preview_says` when given), approved and run through
    `forge evaluate` as a person would, with the oracle's files bound into the sandbox."""
    ctl = work / "ctl"
    ctl.mkdir()
    answers_file = work / "answers.json"
    answers_file.write_text(json.dumps(answers))
    variants = []
    for name, extra in (("oracle", []), ("idle", ["none"])):
        argv = [sys.executable, str(ORACLE), str(answers_file), str(ctl), *extra]
        atom = {"id": "code", "role": "coding", "command": argv, "timeoutMs": 60000}
        formula = {
            "schemaVersion": 1,
            "name": name,
            "atoms": [{**atom, "model": "m", "mounts": mounts}],
        }
        (cohort_dir / f"{name}.yaml").write_text(json.dumps(formula))
        sha = hashlib.sha256((cohort_dir / f"{name}.yaml").read_bytes()).hexdigest()
        variants.append({"name": name, "formula": f"{name}.yaml", "formulaSha256": sha})
    stub = json.loads((cohort_dir / "cohort.stub.json").read_text())
    del stub["source"]
    stub.update(hypothesis=hypothesis, variants=variants)
    (cohort_dir / "cohort.json").write_text(json.dumps(stub))
    hooks = {"sandboxBinds": [str(ctl), str(answers_file)]}
    env = {
        **os.environ,
        "FORGE_LAB_DIR": str(work / "lab"),
        "FORGE_LAB_TEST_HOOKS": json.dumps(hooks),
    }
    out = work / "run"
    argv = [
        sys.executable,
        "-m",
        "forge.cli",
        "evaluate",
        "--cohort",
        str(cohort_dir / "cohort.json"),
    ]
    argv += ["--source", str(cohort_dir / "source"), "--out", str(out)]
    preview = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    assert preview.returncode == 0, preview.stderr
    if preview_says is not None:
        assert preview_says in preview.stdout, preview.stdout
    digest = preview.stdout.split("--approve ")[-1].split()[0]
    run = subprocess.run(
        [*argv, "--approve", digest],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,
    )
    return OracleRun(run, out, ctl)
