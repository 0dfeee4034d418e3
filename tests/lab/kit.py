"""The Lab's test kit: a fixture repository, cohort files, the fake harness, and a CLI runner.

Fixture repo (commit B): `calc.py` whose `add` is wrong, `tests/test_calc.py` (passes at B),
`tests/test_flaky.py` (fails or passes per a schedule file, one character per run),
`tests/test_broken.py` (always fails). Commit L fixes `add` and must never reach an attempt.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from forge.attempt.sandbox import SYSTEM

HERE = Path(__file__).resolve().parent
FAKE_HARNESS = HERE / "fake_harness.py"
PYTHON = sys.executable
ORIGIN = "https://github.com/owner/repo.git"
PYTEST = ["/usr/bin/env", "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1", PYTHON, "-m", "pytest"]
"""Without the dev plugins a fixture pytest run starts in 0.3 s instead of 2 s."""
_HIDDEN_BY_SANDBOX = sorted(
    {
        os.path.realpath(path)
        for path in (sys.base_prefix, sys.prefix, str(HERE.parents[1]))
        if not any(os.path.realpath(path).startswith(f"{root}/") for root in SYSTEM)
    }
)
INTERPRETER_MOUNTS: dict[str, Any] = {"mounts": _HIDDEN_BY_SANDBOX} if _HIDDEN_BY_SANDBOX else {}
"""The sandbox shows only the system folders: an interpreter installed elsewhere (pyenv), the
venv and this checkout (the fake harness) are mounted when they live outside them."""
NO_USERNS_BWRAP = HERE / "no_userns_bwrap.sh"
"""A bubblewrap that fails as it does on a kernel without unprivileged user namespaces."""
ACCEPTANCE = "#!/bin/sh\ngrep -q 'return a + b' calc.py\n"
"""The hidden acceptance: add must add. A grep, so the suite starts fewer interpreters."""

HELD_MS = 600_000
"""The atom timeout of a harness a test holds at its gate while a second one starts: on a loaded
machine that start can come later than the default 30 s, and the test, not a timeout, ends both."""

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST_CALC = (
    "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n\n\n"
    "def test_zero():\n    assert mul(0, 5) == 0\n"
)
TEST_FLAKY = """import pathlib

SCHEDULE = pathlib.Path({schedule!r})


def test_flip():
    counter = SCHEDULE.with_suffix(".count")
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    plan = SCHEDULE.read_text().strip()
    assert plan[min(n, len(plan) - 1)] == "P"
"""
TEST_BROKEN = "def test_always():\n    assert False\n"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
    )
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


@dataclass
class Kit:
    root: Path
    repo: Path = field(init=False)
    cohort_dir: Path = field(init=False)
    ctl: Path = field(init=False)
    base: str = field(init=False)
    later: str = field(init=False)
    started: list[subprocess.Popen[str]] = field(init=False, default_factory=list)
    """Every `forge evaluate` `start` ran, for the fixture to stop when a test failed early."""

    def __post_init__(self) -> None:
        self.repo = self.root / "fx"
        self.cohort_dir = self.root / "cohort"
        self.ctl = self.root / "ctl"
        for path in (self.repo / "tests", self.cohort_dir, self.ctl):
            path.mkdir(parents=True)
        (self.ctl / "schedule").write_text("PPPPPPPP")
        files = {
            "pyproject.toml": "[project]\nname = 'fx'\nversion = '0'\n",
            "calc.py": CALC,
            "README": "fixture\n",
            "tests/test_calc.py": TEST_CALC,
            "tests/test_flaky.py": TEST_FLAKY.format(schedule=str(self.ctl / "schedule")),
            "tests/test_broken.py": TEST_BROKEN,
        }
        for rel, text in files.items():
            (self.repo / rel).write_text(text)
        git(self.repo, "init", "-q")
        git(self.repo, "remote", "add", "origin", ORIGIN)
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-qm", "B")
        self.base = git(self.repo, "rev-parse", "HEAD")
        (self.repo / "calc.py").write_text(CALC.replace("a - b", "a + b"))
        git(self.repo, "commit", "-qam", "L")
        self.later = git(self.repo, "rev-parse", "HEAD")

    def schedule(self, plan: str) -> None:
        """Set test_flip's pass/fail schedule and restart its run counter."""
        (self.ctl / "schedule").write_text(plan)
        (self.ctl / "schedule.count").unlink(missing_ok=True)

    def formula(
        self,
        name: str,
        *,
        model: str = "m1",
        knobs: dict[str, str] | None = None,
        timeout_ms: int = 30_000,
        checks: list[dict[str, Any]] | None = None,
        extra: str = "",
        atom: dict[str, Any] | None = None,
        harness: Path = FAKE_HARNESS,
    ) -> str:
        knobs = {"FAKE_CTL": str(self.ctl), **(knobs or {})}
        argv = ["/usr/bin/env", *(f"{k}={v}" for k, v in knobs.items()), PYTHON, str(harness)]
        document: dict[str, Any] = {
            "schemaVersion": 1,
            "name": name,
            "atoms": [
                {
                    "id": "code",
                    "role": "coding",
                    "command": argv,
                    "timeoutMs": timeout_ms,
                    "model": model,
                    **INTERPRETER_MOUNTS,
                    **(atom or {}),
                }
            ],
        }
        if checks:
            document["checks"] = checks
        rel = f"{name}.yaml"
        (self.cohort_dir / rel).write_text(json.dumps(document, indent=1) + extra)
        return rel

    def plan(
        self,
        name: str,
        *,
        checks: Iterable[str] = (),
        setup: list[dict[str, Any]] | None = None,
        allowed: tuple[str, ...] = ("calc.py",),
        candidate_test_files: tuple[str, ...] = (),
        acceptance: str = ACCEPTANCE,
        knobs: dict[str, str] | None = None,
    ) -> str:
        """A task directory `<name>/` with plan.json, issue.json and acceptance.sh."""
        folder = self.cohort_dir / name
        folder.mkdir(exist_ok=True)
        (folder / "issue.json").write_text(
            json.dumps(
                {
                    "title": f"Fix add ({name})",
                    "body": "add subtracts\n"
                    + "".join(f"{k}={v}\n" for k, v in (knobs or {}).items()),
                }
            )
        )
        (folder / "acceptance.sh").write_text(acceptance)
        plan: dict[str, Any] = {
            "schemaVersion": 1,
            "task": "issue.json",
            "acceptance": "acceptance.sh",
            "baseCommit": self.base,
            "allowedFiles": list(allowed),
            "setup": setup or [],
            "checks": [
                {
                    "id": f"pytest-{i}",
                    "argv": [*PYTEST, "-q", path],
                    "category": "test",
                    "timeoutMs": 60_000,
                }
                for i, path in enumerate(checks)
            ],
        }
        if candidate_test_files:
            plan["candidateTestFiles"] = list(candidate_test_files)
        (folder / "plan.json").write_text(json.dumps(plan, indent=1))
        return f"{name}/plan.json"

    def cohort(
        self,
        *,
        a: str,
        b: str,
        tasks: dict[str, str],
        repetitions: int = 1,
        stop: dict[str, Any] | None = None,
        primary: str = "hiddenAcceptancePassRate",
    ) -> Path:
        document: dict[str, Any] = {
            "schemaVersion": 1,
            "hypothesis": "b fixes more than a",
            "primaryOutcome": primary,
            "variants": [
                {"name": "a", "formula": a, "formulaSha256": sha(self.cohort_dir / a)},
                {"name": "b", "formula": b, "formulaSha256": sha(self.cohort_dir / b)},
            ],
            "tasks": [
                {"name": name, "plan": plan, "planSha256": sha(self.cohort_dir / plan)}
                for name, plan in tasks.items()
            ],
            "repetitions": repetitions,
        }
        if stop:
            document["stop"] = stop
        path = self.cohort_dir / "cohort.json"
        path.write_text(json.dumps(document, indent=1))
        return path

    @property
    def out(self) -> Path:
        return self.root / "out"

    def argv(self, *extra: str, out: Path | None = None) -> list[str]:
        return [
            PYTHON,
            "-m",
            "forge.cli",
            "evaluate",
            "--cohort",
            str(self.cohort_dir / "cohort.json"),
            "--source",
            str(self.repo),
            "--out",
            str(out or self.out),
            *extra,
        ]

    def cli(
        self, *extra: str, env: dict[str, str] | None = None, out: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*extra, out=out),
            capture_output=True,
            text=True,
            env=self.env(env),
            timeout=110,
        )

    def start(self, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        """`forge evaluate` in the background, for tests that signal or kill it mid-run."""
        process = subprocess.Popen(
            self.argv(*extra),
            env=self.env(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.started.append(process)
        return process

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The caller's environment; the control folder is mounted writable in the sandbox."""
        extra = dict(extra or {})
        hooks = json.loads(extra.pop("FORGE_LAB_TEST_HOOKS", "{}"))
        hooks.setdefault("sandboxBinds", []).append(str(self.ctl))
        return {
            **os.environ,
            "FORGE_LAB_TRANSIENT_WAITS_MS": "10,20",
            "FORGE_LAB_TEST_HOOKS": json.dumps(hooks),
            **extra,
        }

    def digest(self, out: Path | None = None) -> str:
        preview = self.cli(out=out)
        assert preview.returncode == 0, preview.stderr
        return preview.stdout.split("--approve ")[-1].split()[0]

    def approve(
        self, *extra: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return self.cli("--approve", self.digest(), *extra, env=env)

    def harnesses(self) -> list[psutil.Process]:
        """The fake harness processes of this kit's attempts, as the host sees them (the pid a
        sandboxed harness knows is its PID namespace's)."""
        found = []
        for proc in psutil.process_iter(["cmdline"]):
            argv = proc.info["cmdline"] or []
            if not argv or argv[-1] != str(FAKE_HARNESS) or "--args" in argv:
                continue  # not the harness, or the sandbox around it
            with contextlib.suppress(psutil.Error):
                if proc.environ().get("FAKE_CTL") == str(self.ctl):
                    found.append(proc)
        return found

    def probes(self) -> list[dict[str, Any]]:
        path = self.ctl / "probes.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def report(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads((self.out / "report.json").read_text())
        return result

    def record(self, task: str, variant: str, rep: int = 1) -> dict[str, Any]:
        path = self.out / "attempts" / task / variant / f"rep-{rep}" / "attempt.json"
        result: dict[str, Any] = json.loads(path.read_text())
        return result


def marker_processes(marker: str) -> list[int]:
    """Processes still alive whose command line or environment mentions `marker`."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            text = (
                " ".join(proc.info["cmdline"] or [])
                + " "
                + " ".join(f"{k}={v}" for k, v in proc.environ().items())
            )
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if marker in text and proc.pid != os.getpid() and proc.status() != psutil.STATUS_ZOMBIE:
            found.append(proc.pid)
    return found


def kill_all(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def normalised(report: dict[str, Any]) -> dict[str, Any]:
    """A report without timings, ids, paths or parallelism, for comparing two runs."""
    drop = {
        "elapsedMs",
        "harnessMs",
        "startedAt",
        "finishedAt",
        "attemptId",
        "peakRssBytes",
        "cpuSeconds",
        "parallel",
        "invocations",
        "notes",
    }
    clean = json.loads(json.dumps(report))
    clean["attempts"] = [{k: v for k, v in a.items() if k not in drop} for a in clean["attempts"]]
    for variant in clean["variants"]:
        variant.pop("elapsedMs")
        variant.pop("harnessMs")
        variant.pop("elapsedPerAcceptedMs")
    for variant in clean["headToHead"]["variants"]:
        variant.pop("elapsedPerAcceptedMs")
    clean["notes"] = [n for n in clean["notes"] if "contention" not in n]
    clean.pop("history")
    return clean


def wait_for(folder: Path, pattern: str, count: int, process: subprocess.Popen[str]) -> None:
    """Wait until `count` files match `pattern` in `folder`, failing if the CLI exits first."""
    deadline = time.monotonic() + 90
    while len(list(folder.glob(pattern))) < count:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll an observable condition (a process gone, a directory removed) with a safety deadline."""
    deadline = time.monotonic() + 90
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.05)
