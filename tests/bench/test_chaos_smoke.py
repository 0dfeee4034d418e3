"""One minute of bench/chaos.py (fewer actors, a fixed seed): the same code as the hour-long run.

It starts a real supervisor with terminals, a Chromium, the walker, the Lab and the gh shim, and
injects faults; a run takes about 75 s of wall time and one core. It runs only when asked,

    FORGE_CHAOS_SMOKE=1 .venv/bin/pytest -q -n0 tests/bench/test_chaos_smoke.py

because it is not yet free of flakes on a saturated machine: of 20 runs two at a time (load
average 19-23, 2026-12-01) 19 passed and one failed its ping rule (forge p99 2499 ms against
the echo server's 845 ms, two forge-only stalls of 2.5-2.9 s in the run's first 20 s, cause not
found yet), and a failing CI run lands nothing. docs/benchmarks.md, "Chaos", has the figures.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("FORGE_CHAOS_SMOKE") != "1", reason="set FORGE_CHAOS_SMOKE=1 to run"
    ),
    pytest.mark.timeout(600),
]


def test_a_minute_of_chaos_breaks_no_invariant(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-P", str(ROOT / "bench" / "chaos.py"), "--minutes", "1", "--seed", "7",
         "--small", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=540, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "no invariant violated (seed 7)" in result.stdout
