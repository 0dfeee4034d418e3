"""gh shim benchmark: the cost the shim adds per gh call, side by side with calling gh directly.

    .venv/bin/python bench/shim.py [--runs N]

The "real" gh is a minimal sh script (so the shim's own cost is not buried under a Python
start-up); each scenario runs the same argv through the installed shim and directly, interleaved,
and prints medians and the difference. Scenarios: a healthy cacheable read (`issue list`, stored
on the way past), a healthy other call (`api x`), a failing read served from cache (503, runs
Python), and a spooled write (503, runs Python). The goal is <= 5 ms added for a healthy call.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from forge.health.settings import Settings
from forge.health.shim_install import install

FAKE_GH = """#!/bin/sh
# Answers like gh: a small issue list, or a 503 when BENCH_FAIL=1.
if [ "${BENCH_FAIL:-0}" = 1 ]; then
  echo 'HTTP 503: 503 Service Unavailable (https://api.github.com/graphql)' >&2
  exit 1
fi
case "$1 $2" in
'issue comment') echo "https://github.com/acme/widget/issues/1#issuecomment-1" ;;
*) printf '1\\tOPEN\\tfirst\\n2\\tOPEN\\tsecond\\n' ;;
esac
"""


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, check=False, stdin=subprocess.DEVNULL
    )
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    runs = parser.parse_args().runs
    root = Path(tempfile.mkdtemp(prefix="forge-bench-shim-"))
    try:
        realbin = root / "realbin"
        realbin.mkdir()
        (realbin / "gh").write_text(FAKE_GH)
        (realbin / "gh").chmod(0o755)
        project = root / "project"
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        subprocess.run(
            ["git", "-C", str(project), "remote", "add", "origin", "https://github.com/a/w"],
            check=True,
        )
        env = {
            "PATH": f"{root / 'home' / 'bin'}:{realbin}:/usr/bin:/bin",
            "HOME": str(root),
            "FORGE_HOME": str(root / "home"),
            "FORGE_REPLAY": "0",
            "FORGE_QUEUE_MAX": str(10 * runs),
        }
        shim = install(Settings.from_env(env))
        direct = realbin / "gh"
        scenarios = [
            ("healthy read (issue list)", ["issue", "list"], {}),
            ("healthy other call (api x)", ["api", "x"], {}),
            ("failing read, served from cache", ["issue", "list"], {"BENCH_FAIL": "1"}),
            (
                "spooled write (issue comment)",
                ["issue", "comment", "1", "-b", "x"],
                {"BENCH_FAIL": "1"},
            ),
        ]
        subprocess.run([str(shim), "issue", "list"], env=env, cwd=project, capture_output=True)
        print(f"# {time.strftime('%Y-%m-%d')} {platform.node()} {platform.processor() or ''}")
        print(f"# {os.cpu_count()} CPUs, Python {platform.python_version()}, {runs} runs each")
        print("| scenario | direct gh p50 ms | through shim p50 ms | added ms | ratio |")
        print("|---|---|---|---|---|")
        noop = root / "noop"
        noop.write_text("#!/bin/sh\n")
        noop.chmod(0o755)
        floor = statistics.median(timed([str(noop)], env, project) for _ in range(runs))
        print(f"| floor: one empty sh script | {floor:.2f} | | | |")
        for name, argv, extra in scenarios:
            call_env = {**env, **extra}
            through, plain = [], []
            for _ in range(runs):
                plain.append(timed([str(direct), *argv], call_env, project))
                through.append(timed(["/bin/sh", str(shim), *argv], call_env, project))
            a, b = statistics.median(plain), statistics.median(through)
            print(f"| {name} | {a:.2f} | {b:.2f} | {b - a:.2f} | {b / a:.1f} |")
        print("(added ms / floor = the shim's cost in empty-process equivalents)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
