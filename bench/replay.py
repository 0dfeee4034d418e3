"""Replay benchmark: 20 recorded PRs on a ~1,000-commit repository; where the wall time goes.

    .venv/bin/python -P bench/replay.py [--prs 20] [--history 980]

The repository is the replay test kit's project (tests/lab/replay_kit.py) grown to ~1,000
commits with `git fast-import`, then 20 PRs merged in turn: even ones fix a bug in an existing
module and add its test (a test failure at base), odd ones add a new module and the test that
imports it (a test-compile with an interface contract); half are squashed, half merged with a
merge commit after main moved on. The PR and issue records are served by the stateful fake gh
through forge health's installed shim, as in the tests. The run is `forge.lab.replay_tasks.replay`
in-process; the report splits the wall into the hidden tests' pytest runs, the gh reads, and
forge's own work (git, the event plugin's parsing, the contract, writing the files).
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from forge.lab.replay_tasks import ReplayOptions, replay  # noqa: E402
from tests.lab.replay_kit import REPO, Project  # noqa: E402


def grow_history(project: Project, commits: int) -> None:
    """`commits` more commits on main, each touching one of 100 history files (fast-import)."""
    parent = project.head()
    stream = []
    for index in range(commits):
        message = f"history {index}\n".encode()
        content = f"entry {index}\n".encode()
        stream += [
            b"commit refs/heads/main",
            f"committer t <t@t> {1_700_000_000 + index} +0000".encode(),
            b"data %d" % len(message),
            message,
            f"from {parent}".encode() if index == 0 else b"",
            f"M 100644 inline history/h{index % 100:03d}.txt".encode(),
            b"data %d" % len(content),
            content,
        ]
    data = b"\n".join(line for line in stream if line != b"") + b"\n"
    subprocess.run(["git", "fast-import", "--quiet"], cwd=project.repo, input=data, check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=project.repo, check=True)


def build(root: Path, prs: int, history: int) -> tuple[Project, list[int]]:
    project = Project(root)
    modules = {"mods/__init__.py": "", "feats/__init__.py": ""}
    for k in range(0, prs, 2):
        modules[f"mods/m{k}.py"] = f"def f{k}(x):\n    return x - 1\n"
    project.write(modules)
    project.commit("modules")
    grow_history(project, history)
    numbers = []
    for k in range(prs):
        issue, number = 1000 + k, 2000 + k
        project.issue(issue, f"issue {k}", f"Task {k}: see the tests.")
        if k % 2 == 0:
            files = {
                f"mods/m{k}.py": f"def f{k}(x):\n    return x + 1\n",
                f"tests/test_m{k}.py": f"from mods.m{k} import f{k}\n\n\ndef test_f{k}():\n"
                f"    assert f{k}(1) == 2\n",
            }
        else:
            files = {
                f"feats/f{k}.py": f"def g{k}(a: int) -> int:\n    return a * {k}\n",
                f"tests/test_f{k}.py": f"from feats.f{k} import g{k}\n\n\ndef test_g{k}():\n"
                f"    assert g{k}(2) == {2 * k}\n",
            }
        kind = "squash" if k % 4 < 2 else "merge"
        moves = {f"history/moved{k}.txt": "moved\n"} if kind == "merge" else None
        project.pr(
            number, files, title=f"PR {k}", body=f"Closes #{issue}", kind=kind, main_moves=moves
        )
        numbers.append(number)
    return project, numbers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prs", type=int, default=20)
    parser.add_argument("--history", type=int, default=980)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="forge-bench-replay-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        project, numbers = build(root, args.prs, args.history)
        setup_s = time.perf_counter() - started
        commits = subprocess.run(
            ["git", "rev-list", "--count", "main"],
            cwd=project.repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        options = ReplayOptions(
            repo=REPO,
            prs=tuple(numbers),
            source=project.repo,
            out=root / "out",
            python=str(project.python),
            caller_env=project.env,
        )
        started = time.perf_counter()
        result = asyncio.run(replay(options))
        wall_ms = round((time.perf_counter() - started) * 1000)
    own_ms = wall_ms - result.test_run_ms - result.gh_ms
    print(f"# bench/replay.py on {platform.node()}, Python {platform.python_version()}")
    print(f"repository: {commits} commits on main (built in {setup_s:.1f} s)")
    print(f"PRs: {len(numbers)}; built {len(result.built)}, skipped {len(result.skipped)}")
    for skip in result.skipped:
        print(f"  skipped #{skip['pr']}: {skip['reason']}")
    print("| wall | pytest runs | gh reads | forge's own work | own share | own share without gh |")
    print("|---|---|---|---|---|---|")
    seconds = [wall_ms / 1000, result.test_run_ms / 1000, result.gh_ms / 1000, own_ms / 1000]
    shares = [100 * own_ms / wall_ms, 100 * own_ms / (wall_ms - result.gh_ms)]
    print("| " + " | ".join(f"{s:.1f} s" for s in seconds) + " | ", end="")
    print(" | ".join(f"{share:.0f} %" for share in shares) + " |")


if __name__ == "__main__":
    main()
