"""The forge-health harness: the real shim in `home/bin` ahead of the stateful fake gh in `realbin`.

Tests call gh exactly as production does (PATH walk, marker skip, exec), in a git project whose
origin is acme/widget, with FORGE_HOME, the fake's state, faults and call log all under tmp_path.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from forge.health.settings import Settings
from forge.health.shim_install import install
from forge.health.spool import ProjectQueue

FAKE_DIR = Path(__file__).parent / "fake_gh"
SHELLS = ["/usr/bin/dash", "/usr/bin/bash --posix"]


def write_exec(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def python_gh(path: Path, script: str) -> Path:
    """A 2-line sh wrapper: the fake is a real executable named gh."""
    return write_exec(path, f'#!/bin/sh\nexec {sys.executable} -I -S {FAKE_DIR / script} "$@"\n')


@dataclass
class Fake:
    state: Path
    faults: Path
    log: Path

    def fail(
        self, match: str, kind: str, times: int = 1, phase: str = "before", delay: float = 0
    ) -> None:
        rules = json.loads(self.faults.read_text()) if self.faults.exists() else []
        rules.append({"match": match, "kind": kind, "times": times, "phase": phase, "delay": delay})
        self.faults.write_text(json.dumps(rules))

    def clear_faults(self) -> None:
        self.faults.unlink(missing_ok=True)

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def argvs(self) -> list[list[str]]:
        return [call["argv"] for call in self.calls()]

    def document(self) -> dict[str, Any]:
        """The fake forge's whole state: repos (issues, collaborators) and gists."""
        if not self.state.exists():
            return {}
        data: dict[str, Any] = json.loads(self.state.read_text())
        return data

    def issues(self, repo: str = "acme/widget") -> dict[str, Any]:
        issues: dict[str, Any] = self.document().get("repos", {}).get(repo, {}).get("issues", {})
        return issues

    def gists(self) -> list[dict[str, Any]]:
        gists: list[dict[str, Any]] = self.document().get("gists", [])
        return gists

    def collaborators(self, repo: str = "acme/widget") -> list[str]:
        found: list[str] = self.document().get("repos", {}).get(repo, {}).get("collaborators", [])
        return found

    def seed(self, *titles: str, repo: str = "acme/widget") -> None:
        data = json.loads(self.state.read_text()) if self.state.exists() else {}
        target = data.setdefault("repos", {}).setdefault(
            repo, {"name": repo, "issues": {}, "next": 1}
        )
        for title in titles:
            number = target["next"]
            target["next"] += 1
            target["issues"][str(number)] = {
                "number": number,
                "title": title,
                "body": f"body of {title}",
                "state": "OPEN",
                "labels": [],
                "comments": [],
                "createdAt": "2020-01-01T00:00:00Z",
            }
        self.state.write_text(json.dumps(data))


@dataclass
class ForgeEnv:
    root: Path
    project: Path
    shim: Path
    realbin: Path
    state_dir: Path
    env: dict[str, str]
    fake: Fake
    shell: str = "dash"

    def gh(
        self,
        *argv: str,
        stdin: bytes = b"",
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """One gh call through the real shim, run by the shell under test."""
        return subprocess.run(
            [*self.shell.split(), str(self.shim), *argv],
            input=stdin,
            capture_output=True,
            env={**self.env, **(env or {})},
            cwd=cwd or self.project,
            check=False,
            timeout=60,
        )

    def forge(
        self, *argv: str, env: Mapping[str, str] | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "forge.cli", *argv],
            capture_output=True,
            text=True,
            env={**self.env, **(env or {})},
            cwd=cwd or self.project,
            check=False,
            timeout=60,
        )

    def observations(self) -> list[list[str]]:
        lines: list[list[str]] = []
        for name in ("observations.log.1", "observations.log"):
            path = self.state_dir / name
            if path.exists():
                lines += [line.split("\t") for line in path.read_text().splitlines()]
        return lines

    def settings(self) -> Settings:
        return Settings.from_env(self.env)

    def queue_dir(self, project: Path | None = None) -> Path:
        """Where forge keeps a project's write queue: its state directory, not the project."""
        return ProjectQueue.of(self.state_dir, project or self.project).directory


TOOLS = ("head", "grep", "date", "cat", "rm", "mv", "wc", "sha256sum", "mkdir", "perl", "sed")


def tools_dir(root: Path) -> Path:
    """The utilities the shim uses and nothing else, so a PATH can hold no gh at all."""
    directory = root / "tools"
    directory.mkdir(exist_ok=True)
    for tool in TOOLS:
        found = shutil.which(tool)
        if found and not (directory / tool).exists():
            (directory / tool).symlink_to(found)
    return directory


def make_project(path: Path, remote: str = "https://github.com/acme/widget.git") -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", remote], check=True)
    return path


def git_status(project: Path) -> str:
    """`git status --porcelain` of a project: empty when forge's files stay out of its way."""
    return subprocess.run(
        ["git", "-C", str(project), "status", "--porcelain"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.fixture(params=SHELLS[:1])
def forge_env(tmp_path: Path, request: pytest.FixtureRequest) -> ForgeEnv:
    return build_env(tmp_path, request.param)


@pytest.fixture(params=SHELLS)
def any_shell_env(tmp_path: Path, request: pytest.FixtureRequest) -> ForgeEnv:
    """For the shim suite, which runs under dash and under bash --posix."""
    return build_env(tmp_path, request.param)


def build_env(tmp_path: Path, shell: str) -> ForgeEnv:
    home = tmp_path / "home"
    realbin = tmp_path / "realbin"
    python_gh(realbin / "gh", "fakegh.py")
    (tmp_path / "tmp").mkdir()
    env = {
        "PATH": f"{home / 'bin'}:{realbin}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path / "tmp"),
        "FORGE_HOME": str(home),
        "FAKEGH_STATE": str(tmp_path / "fake-state.json"),
        "FAKEGH_FAULTS": str(tmp_path / "fake-faults.json"),
        "FAKEGH_LOG": str(tmp_path / "fake-log.jsonl"),
        "LC_ALL": "C.UTF-8",
    }
    settings = Settings.from_env(env)
    shim = install(settings)
    fake = Fake(Path(env["FAKEGH_STATE"]), Path(env["FAKEGH_FAULTS"]), Path(env["FAKEGH_LOG"]))
    project = make_project(tmp_path / "project")
    return ForgeEnv(tmp_path, project, shim, realbin, settings.state_dir, env, fake, shell)


def wait_until(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    """For the detached replay: poll a condition on disk, with a deadline, not a fixed sleep."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached within the deadline")
        time.sleep(0.02)
