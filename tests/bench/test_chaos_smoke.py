"""One minute of bench/chaos.py (fewer actors, a fixed seed): the same code as the hour-long run.

It starts a real supervisor with terminals, a Chromium, the walker, the Lab and the gh shim,
and injects faults; a run takes about 75 s and one core (measured: 72 s wall, 78 s of CPU for
the script, the supervisor and its workers), so it is part of the default suite: a regression
in any invariant fails CI with the seed and the event log's tail.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(600)


def test_a_minute_of_chaos_breaks_no_invariant(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-P", str(ROOT / "bench" / "chaos.py"), "--minutes", "1", "--seed", "7",
         "--small", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=540, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "no invariant violated (seed 7)" in result.stdout
