"""Lab benchmark: per-attempt overhead and the speedup of --parallel 4 over --parallel 1.

    .venv/bin/python -P bench/lab.py [--quick]

1. Overhead on a 2,000-file repository, median of N attempts, on disk and on tmpfs (/dev/shm):
   preparing the attempt's throwaway source and workspace, capturing the tree and its diff, and
   removing it all, side by side with a bare `git worktree add` + `git worktree remove` in the
   source itself (what an attempt must not do: it would leave history and worktrees in --source).
2. `forge evaluate --cohort` over 16 attempts whose harness sleeps 1 s, with --parallel 1 and
   --parallel 4 (out on tmpfs), and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from forge.attempt.git import add_worktree, capture_tree, make_attempt_source, unified_diff

ROOT = Path(__file__).resolve().parent.parent
FILES = 2000


def load_kit() -> Any:
    """The Lab's test kit (fixture repository, fake harness): the benchmark runs what tests run."""
    spec = importlib.util.spec_from_file_location("lab_kit", ROOT / "tests" / "lab" / "kit.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


KIT = load_kit()


def big_repo(root: Path) -> tuple[Path, str]:
    repo = root / "repo"
    for index in range(FILES):
        path = repo / f"pkg{index % 40}" / f"mod_{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"VALUE = {index}\n" + "# filler line\n" * 40)
    KIT.git(repo, "init", "-q")
    KIT.git(repo, "add", "-A")
    KIT.git(repo, "commit", "-qm", "base")
    return repo, KIT.git(repo, "rev-parse", "HEAD")


async def forge_attempt(repo: Path, base: str, where: Path) -> float:
    started = time.perf_counter()
    await asyncio.to_thread(where.mkdir)
    source, workspace = where / "source", where / "workspace"
    await make_attempt_source(repo, None, base, source)
    await add_worktree(source, workspace, base)
    (workspace / "pkg0" / "mod_0.py").write_text("VALUE = -1\n")
    capture = await capture_tree(workspace, base, where / "index")
    await unified_diff(source, base, capture.commit)
    shutil.rmtree(where)
    return time.perf_counter() - started


def bare_worktree(repo: Path, base: str, where: Path) -> float:
    started = time.perf_counter()
    KIT.git(repo, "worktree", "add", "-q", "--detach", str(where), base)
    (where / "pkg0" / "mod_0.py").write_text("VALUE = -1\n")
    KIT.git(where, "diff")
    KIT.git(repo, "worktree", "remove", "--force", str(where))
    return time.perf_counter() - started


def overhead(root: Path, label: str, rounds: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    repo, base = big_repo(root)
    ours = [asyncio.run(forge_attempt(repo, base, root / f"attempt-{i}")) for i in range(rounds)]
    bare = [bare_worktree(repo, base, root / f"bare-{i}") for i in range(rounds)]
    mine, theirs = statistics.median(ours), statistics.median(bare)
    print(
        f"overhead {label:6}: forge attempt (source + workspace + capture + diff + cleanup) "
        f"median {mine:.3f} s; bare worktree add/remove {theirs:.3f} s; ratio {mine / theirs:.2f}x"
    )


def parallel_speedup(root: Path, attempts: int) -> None:
    kit = KIT.Kit(root / "kit")
    tasks = {f"t{i}": kit.plan(f"t{i}") for i in range(attempts // 2)}
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_SLEEP_S": "1"}),
        b=kit.formula("b", knobs={"FAKE_SLEEP_S": "1", "FAKE_ACTION": "none"}),
        tasks=tasks,
    )
    timings = {}
    for parallel in (1, 4):
        out = root / f"out-{parallel}"
        started = time.perf_counter()
        result = kit.cli("--approve", kit.digest(out=out), "--parallel", str(parallel), out=out)
        timings[parallel] = time.perf_counter() - started
        assert result.returncode in (0, 2), result.stderr
    print(
        f"{attempts} sleep-bound attempts (1 s harness): --parallel 1 {timings[1]:.1f} s, "
        f"--parallel 4 {timings[4]:.1f} s, speedup {timings[1] / timings[4]:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and attempts")
    args = parser.parse_args()
    rounds, attempts = (3, 8) if args.quick else (10, 16)
    print(
        f"{time.strftime('%Y-%m-%d')} {platform.node()} {platform.machine()}, "
        f"{os.cpu_count()} cpus, Python {sys.version.split()[0]}"
    )
    with tempfile.TemporaryDirectory(dir="/var/tmp") as disk:
        overhead(Path(disk) / "overhead", "disk", rounds)
    shm = Path("/dev/shm")
    if shm.is_dir():
        with tempfile.TemporaryDirectory(dir=shm) as tmpfs:
            overhead(Path(tmpfs) / "overhead", "tmpfs", rounds)
            parallel_speedup(Path(tmpfs), attempts)


if __name__ == "__main__":
    main()
