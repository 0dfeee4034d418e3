"""bench/agent.py on two turns a side: the same code as the recorded run, a real `forge
supervise` with an agent seat beside the SDK's own client (in this process and in a child), all
on the real Claude Code CLI and the scripted model server. It holds no figure to a threshold
(the recorded run judges the goals). About 40 s of two busy cores, over paths the agent seat's
own tests already cover, so it runs only when asked,

    FORGE_AGENT_BENCH_SMOKE=1 .venv/bin/pytest -q tests/bench/test_agent_bench.py -n 0
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("claude_agent_sdk")

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.skipif(
        os.environ.get("FORGE_AGENT_BENCH_SMOKE") != "1",
        reason="set FORGE_AGENT_BENCH_SMOKE=1 to run",
    ),
    pytest.mark.timeout(600),
]

FIGURE = r"(\d+\.\d+)"


def test_two_turns_a_side_measure_the_delta_path_and_the_idle_seat() -> None:
    result = subprocess.run(
        [sys.executable, "-P", str(ROOT / "bench" / "agent.py"), "--turns", "2",
         "--settle", "0.05"],
        capture_output=True, text=True, timeout=540, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    out = result.stdout
    assert "requests no turn answered: 0" in out
    for side in ("forge", "floor", "relay"):
        found = re.search(rf"delta->frame  {side}  p50 {FIGURE} ms  p90 {FIGURE} ms", out)
        assert found is not None, out
        assert 0 < float(found[1]) <= float(found[2])
    assert re.search(rf"forge/floor  p50 {FIGURE}x  p90 {FIGURE}x; goal p50", out), out
    seat = re.search(rf"forge seat +RSS +{FIGURE} MiB  PSS +{FIGURE} MiB  \((\d+)\)", out)
    assert seat is not None, out
    assert int(seat[3]) >= 2, "the worker and the CLI under it"
    assert re.search(rf"floor: bare CLI +RSS +{FIGURE} MiB", out), out
    assert re.search(rf"relay: SDK \+ CLI +RSS +{FIGURE} MiB", out), out
    assert re.search(rf"forge/bare CLI  RSS {FIGURE}x  PSS {FIGURE}x", out), out
