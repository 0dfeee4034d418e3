"""Lab benchmark: per-attempt overhead and the speedup of --parallel 4 over --parallel 1.

    .venv/bin/python -P bench/lab.py [--quick]

1. Overhead on a 2,000-file repository, median of N attempts, on disk and on tmpfs (/dev/shm):
   preparing the attempt's throwaway source and workspace, capturing the tree and its diff, and
   removing it all, side by side with a bare `git worktree add` + `git worktree remove` in the
   source itself (what an attempt must not do: it would leave history and worktrees in --source).
2. `forge evaluate --cohort` over 16 attempts whose harness sleeps 1 s, then 3 s (`--sleeps`),
   with --parallel 1 and --parallel 4 (out on tmpfs), and the ratio, with the recipe sandboxed
   (bubblewrap) and without. Each attempt also spends about half a second of CPU (its
   interpreters, ~25 git processes, three acceptance runs): beside a 1 s sleep that is a third of
   it, and four attempts started together reach that part together on two cores, so the 1 s case
   measures the CPU as much as the parallelism; at 3 s the harness is sleep-bound.
3. The real-sized case: a generated ~700-file Python repository whose suite takes ~0.4 s, one
   required pytest check. forge's own time per attempt (its wall time minus the recipe's and every
   check's processes, from attempt.json and verification.json) beside two floors measured in the
   same run on the same disk, in a plain clone: the bare tree work the attempt's trees need
   (the workspace with a git folder of its own, a `clone --no-hardlinks`, since the recipe must
   never share forge's; a worktree for each of the three verification views; one diff; their
   removal), and the older floor with a worktree for the workspace too.
4. `model` (`--only model`): the scripted model's round trip (a streamed reply of 4,096
   characters in 64-character deltas, about 12.8 KB of server-sent events,
   `forge.testing.model_server`) through an allow-list egress proxy naming only its port, beside
   the same request sent to it directly, alternating blocks in one run, each on a keep-alive
   client connection (as the CLI's). Two ways through: `plain` (an `http://` base URL: the proxy
   parses each request and response and forwards it on an upstream connection of its own) and
   `tunnel` (CONNECT once, then requests inside the tunnel: what an `https://` base URL such as
   the real API's costs, less its TLS). Server and proxy run in a child process on forge's event
   loop, as in an attempt runner. Prints the medians and the ratios (goal: at most 1.2x).
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import platform
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from forge import eventloop, logs
from forge.attempt.checkouts import (
    capture_tree,
    make_attempt_source,
    make_workspace,
    save_index,
    unified_diff,
)
from forge.attempt.egress.policy import allow_list_policy
from forge.attempt.egress.proxy import EgressProxy
from forge.testing.model_script import parse_script
from forge.testing.model_server import ModelServer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the Lab's test kit: the benchmark runs what the tests run

import tests.lab.kit as KIT  # noqa: E402

FILES = 2000


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
    await make_attempt_source(repo, base, source)
    await make_workspace(source, base, workspace, None)
    await save_index(workspace, where / "stat-index")
    (workspace / "pkg0" / "mod_0.py").write_text("VALUE = -1\n")
    capture = await capture_tree(source, workspace, base, where / "index", where / "stat-index")
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


def evaluate(kit: Any, *extra: str, out: Path, env: dict[str, str] | None) -> float:
    """`forge evaluate --approve` through the kit, without the tests' 110 s timeout; the CPU
    seconds it and every process under it spent (all of them are waited for)."""
    argv = kit.argv("--approve", kit.digest(out=out), *extra, out=out)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(argv, capture_output=True, text=True, env=kit.env(env), check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert result.returncode in (0, 2), result.stderr
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


NO_SANDBOX = {"FORGE_LAB_BWRAP": str(KIT.NO_USERNS_BWRAP)}
"""A bubblewrap that cannot create namespaces: the run goes on with the layout seal alone."""


def parallel_speedup(root: Path, attempts: int, sleep: str) -> None:
    kit = KIT.Kit(root / "kit")
    tasks = {f"t{i}": kit.plan(f"t{i}") for i in range(attempts // 2)}
    kit.cohort(
        a=kit.formula("a", knobs={"FAKE_SLEEP_S": sleep}),
        b=kit.formula("b", knobs={"FAKE_SLEEP_S": sleep, "FAKE_ACTION": "none"}),
        tasks=tasks,
    )
    cores = os.cpu_count() or 1
    for label, env in (("sandboxed", None), ("no sandbox", NO_SANDBOX)):
        timings, cpu = {}, {}
        for parallel in (1, 4):
            out = root / f"out-{label[:2]}-{parallel}"
            kit.digest(out=out)
            started = time.perf_counter()
            cpu[parallel] = evaluate(kit, "--parallel", str(parallel), out=out, env=env)
            timings[parallel] = time.perf_counter() - started
        # The ceiling: four at a time cannot beat a quarter of the serial wall time, nor the
        # CPU the parallel run spent spread over every core of this machine.
        ceiling = timings[1] / max(timings[1] / 4, cpu[4] / cores)
        print(
            f"{attempts} attempts ({sleep} s harness sleep), {label}: --parallel 1 "
            f"{timings[1]:.1f} s, --parallel 4 {timings[4]:.1f} s, "
            f"speedup {timings[1] / timings[4]:.2f}x; CPU {cpu[1]:.1f} s / {cpu[4]:.1f} s "
            f"({cpu[1] / attempts:.2f} s per attempt at --parallel 1); ceiling on {cores} "
            f"cores {ceiling:.2f}x, speedup / ceiling {timings[1] / timings[4] / ceiling:.2f}"
        )


REAL_MODULES = 600
REAL_TESTS = 40


def real_repo(kit: Any) -> None:
    """Replace the kit's fixture repository by a ~700-file one (calc.py and its bug kept)."""
    repo = kit.repo
    for index in range(REAL_MODULES):
        path = repo / f"pkg{index % 30}" / f"mod_{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f'"""Module {index}."""\n\n\ndef value_{index}(x: int) -> int:\n'
            f"    return x + {index}\n" + "# filler\n" * 30
        )
    for pkg in range(30):
        (repo / f"pkg{pkg}" / "__init__.py").write_text("")
    for index in range(REAL_TESTS):
        module = index * (REAL_MODULES // REAL_TESTS)
        (repo / "tests" / f"test_mod_{index}.py").write_text(
            f"from pkg{module % 30}.mod_{module} import value_{module}\n\n\n"
            f"def test_value() -> None:\n    assert value_{module}(1) == {module + 1}\n"
        )
    KIT.git(repo, "rm", "-q", "tests/test_broken.py", "tests/test_flaky.py")
    KIT.git(repo, "add", "-A")
    KIT.git(repo, "commit", "-qm", "real-sized: a suite that passes")
    kit.base = KIT.git(repo, "rev-parse", "HEAD")


def own_ms(attempt: Path) -> float:
    """The attempt's wall time minus its recipe's and every check's (all views) process time."""
    record = json.loads((attempt / "attempt.json").read_text())
    views = json.loads((attempt / "verification.json").read_text())["views"]
    checks = sum(o["elapsedMs"] for view in views.values() for o in view["observations"])
    return float(record["elapsedMs"] - record.get("harnessMs", 0) - checks)


def floor_s(repo: Path, base: str, where: Path, *, clone: bool = True) -> float:
    """The bare tree work of one attempt: the workspace (a clone with its own git folder, or a
    worktree), 3 view worktrees, a diff, removals."""
    started = time.perf_counter()
    trees = [where / name for name in ("workspace", "candidate", "protected", "independent")]
    if clone:
        KIT.git(where.parent, "clone", "-q", "--no-hardlinks", str(repo), str(trees[0]))
        KIT.git(trees[0], "checkout", "-q", "--detach", base)
    for tree in trees[1:] if clone else trees:
        KIT.git(repo, "worktree", "add", "-q", "--detach", str(tree), base)
    (trees[0] / "calc.py").write_text("changed\n")
    KIT.git(trees[0], "diff")
    for tree in trees:
        shutil.rmtree(tree)
    KIT.git(repo, "worktree", "prune")
    return time.perf_counter() - started


def real_sized(root: Path, attempts: int) -> None:
    kit = KIT.Kit(root / "kit")
    real_repo(kit)
    suite = ["tests/"]
    tasks = {f"t{i}": kit.plan(f"t{i}", checks=suite) for i in range(attempts // 2)}
    kit.cohort(a=kit.formula("a"), b=kit.formula("b", knobs={"FAKE_ACTION": "none"}), tasks=tasks)
    started = time.perf_counter()
    suite_run = subprocess.run(
        [*KIT.PYTEST, "-q", "-p", "no:cacheprovider", "tests/"],
        cwd=kit.repo,
        capture_output=True,
        check=False,
    )
    suite_s = time.perf_counter() - started
    files = len(KIT.git(kit.repo, "ls-files").splitlines())
    print(
        f"real-sized repository: {files} files, suite {suite_s:.2f} s (exit {suite_run.returncode})"
    )
    clone = root / "clone"
    KIT.git(root, "clone", "-q", str(kit.repo), str(clone))
    scratch = Path(tempfile.mkdtemp(prefix="forge-bench-floor-"))
    try:
        # The floor before, between and after the runs: the load on a shared machine drifts.
        floor = [floor_s(clone, kit.base, scratch / f"0-{i}") for i in range(4)]
        worktrees = [floor_s(clone, kit.base, scratch / f"w0-{i}", clone=False) for i in range(4)]
        owns = {}
        for step, (label, env) in enumerate((("sandboxed", None), ("no sandbox", NO_SANDBOX))):
            out = root / f"real-{label[:2]}"
            evaluate(kit, out=out, env=env)
            owns[label] = [own_ms(p) / 1000 for p in sorted((out / "attempts").glob("*/*/rep-*"))]
            floor += [floor_s(clone, kit.base, scratch / f"{step + 1}-{i}") for i in range(4)]
            worktrees += [
                floor_s(clone, kit.base, scratch / f"w{step + 1}-{i}", clone=False)
                for i in range(4)
            ]
        for label, own in owns.items():
            report(label, own, floor, worktrees)
    finally:
        shutil.rmtree(scratch)


def report(label: str, own: list[float], floor: list[float], worktrees: list[float]) -> None:
    mine, bare = statistics.median(own), statistics.median(floor)
    older = statistics.median(worktrees)
    print(
        f"real-sized, {label}: forge's own time per attempt median {mine:.3f} s "
        f"(p90 {sorted(own)[int(0.9 * len(own))]:.3f} s, n={len(own)}); floor median "
        f"{bare:.3f} s (n={len(floor)}); ratio {mine / bare:.2f}x; against the worktree-only "
        f"floor {older:.3f} s, {mine / older:.2f}x (load {os.getloadavg()[0]:.1f})"
    )


MODEL_REPLY_CHARS = 4096
MODEL_BLOCK = 25
"""Round trips per block; blocks alternate proxy, direct."""


async def serve_model(turns: int) -> None:
    """The scripted model server and an allow-list proxy naming only it; their ports on stdout
    as one JSON line; until stdin closes."""
    reply = ("The bug is in calc.add. " * (MODEL_REPLY_CHARS // 24 + 1))[:MODEL_REPLY_CHARS]
    script = parse_script({"turns": [{"say": reply}] * turns, "chunk": 64})
    async with ModelServer(script) as server:
        port = int(server.url.rsplit(":", 1)[1])
        proxy = EgressProxy(allow_list_policy([f"127.0.0.1:{port}"], own=()))
        await proxy.start()
        listener = socket.create_server(("127.0.0.1", 0))
        await proxy.serve(listener)
        print(json.dumps({"model": port, "proxy": listener.getsockname()[1]}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await proxy.stop()


def model_round_trips(blocks: int) -> None:
    """The scripted model's streamed reply through the allow-list proxy beside direct."""
    child = subprocess.Popen(
        [sys.executable, "-P", __file__, "--serve-model", str(3 * blocks * MODEL_BLOCK + 3)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        ports = json.loads(child.stdout.readline())
        url = f"http://127.0.0.1:{ports['model']}/v1/messages"
        body = json.dumps(
            {
                "model": "claude-bench",
                "max_tokens": 1024,
                "stream": True,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "fix it"}]}],
            }
        )
        headers = {"content-type": "application/json", "x-api-key": "bench"}
        through = http.client.HTTPConnection("127.0.0.1", ports["proxy"])
        tunnel = http.client.HTTPConnection("127.0.0.1", ports["proxy"])
        tunnel.set_tunnel("127.0.0.1", ports["model"])
        direct = http.client.HTTPConnection("127.0.0.1", ports["model"])
        samples: dict[str, list[float]] = {"plain": [], "tunnel": [], "direct": []}
        sizes: set[int] = set()

        def round_trip(connection: http.client.HTTPConnection, target: str) -> float:
            started = time.perf_counter()
            connection.request("POST", target, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
            elapsed = time.perf_counter() - started
            if response.status != 200:
                raise RuntimeError(f"{response.status}: {data[:200]!r}")
            sizes.add(len(data))
            return elapsed

        ways = {"plain": (through, url), "tunnel": (tunnel, "/v1/messages")}
        ways["direct"] = (direct, "/v1/messages")
        for connection, target in ways.values():  # the first connection's costs are not steady
            round_trip(connection, target)
        for _ in range(blocks):
            for name, (connection, target) in ways.items():
                samples[name] += [round_trip(connection, target) for _ in range(MODEL_BLOCK)]
        for connection, _ in ways.values():
            connection.close()
    finally:
        child.stdin.close()
        child.wait()
    medians = {name: statistics.median(found) for name, found in samples.items()}
    p90 = {name: sorted(found)[int(0.9 * len(found)) - 1] for name, found in samples.items()}
    print(
        f"model round trip ({min(sizes)}-{max(sizes)} B streamed, n={len(samples['direct'])} "
        f"each, load {os.getloadavg()[0]:.1f}): direct median {medians['direct'] * 1e3:.2f} ms "
        f"(p90 {p90['direct'] * 1e3:.2f} ms)"
    )
    for name in ("plain", "tunnel"):
        print(
            f"  through the allow-list proxy, {name}: median {medians[name] * 1e3:.2f} ms "
            f"(p90 {p90[name] * 1e3:.2f} ms), ratio {medians[name] / medians['direct']:.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer rounds and attempts")
    parser.add_argument(
        "--only", choices=("overhead", "parallel", "real", "model"), help="one case"
    )
    parser.add_argument(
        "--sleeps", default="1,3", help="the harness's sleep in the speedup case, comma-separated"
    )
    parser.add_argument("--serve-model", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_model is not None:
        logs.configure(None, to_stderr=False)
        eventloop.run(serve_model(args.serve_model))
        return
    rounds, attempts = (3, 8) if args.quick else (10, 16)
    print(
        f"{time.strftime('%Y-%m-%d')} {platform.node()} {platform.machine()}, "
        f"{os.cpu_count()} cpus, Python {sys.version.split()[0]}"
    )
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.only in (None, "overhead"):
        with tempfile.TemporaryDirectory(dir="/var/tmp") as disk:
            overhead(Path(disk) / "overhead", "disk", rounds)
    shm = Path("/dev/shm")
    if shm.is_dir() and args.only in (None, "overhead", "parallel"):
        with tempfile.TemporaryDirectory(dir=shm) as tmpfs:
            if args.only != "parallel":
                overhead(Path(tmpfs) / "overhead", "tmpfs", rounds)
            if args.only != "overhead":
                for sleep in args.sleeps.split(","):
                    parallel_speedup(Path(tmpfs) / f"sleep-{sleep}", attempts, sleep)
    if args.only in (None, "real"):
        with tempfile.TemporaryDirectory() as disk:
            real_sized(Path(disk), attempts // 2)
    if args.only in (None, "model"):
        model_round_trips(4 if args.quick else 12)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
