"""bench/webclient.py on a few keys, a 1 MB flood and a two-second tab, and on two agent turns a
page and a short conversation scrolled: the same code as the recorded runs. Each starts a real
supervisor (terminal host and a Chromium for the tab; or an agent seat: its worker and the real
Claude Code CLI against the scripted model server) and a second Chromium for the pages, so each
costs a minute or more of two busy cores: they run only when asked,

    FORGE_WEBCLIENT_SMOKE=1 .venv/bin/pytest -q tests/bench/test_webclient_smoke.py
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
        os.environ.get("FORGE_WEBCLIENT_SMOKE") != "1", reason="set FORGE_WEBCLIENT_SMOKE=1 to run"
    ),
    pytest.mark.timeout(600),
]


def test_a_small_run_measures_both_pages_and_the_tab() -> None:
    result = subprocess.run(
        [sys.executable, "-P", str(ROOT / "bench" / "webclient.py"), "--only", "terminal",
         "--keys", "5", "--mb", "1", "--repeats", "1", "--seconds", "2"],
        capture_output=True, text=True, timeout=540, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    out = result.stdout
    assert "forge  keystroke->paint" in out
    assert "floor  keystroke->paint" in out
    assert "(5 of 5 keys)" in out
    assert "forge/floor flood: last line" in out
    assert "drawn/received" in out


def test_a_small_run_times_the_agent_stream_on_both_pages_and_scrolls_a_conversation() -> None:
    pytest.importorskip("claude_agent_sdk")
    result = subprocess.run(
        [sys.executable, "-P", str(ROOT / "bench" / "webclient.py"), "--only", "agent",
         "--agent-turns", "2", "--agent-block", "1", "--long-turns", "60",
         "--scroll-frames", "30"],
        capture_output=True, text=True, timeout=540, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    out = result.stdout
    assert "forge  model delta->paint" in out
    assert "floor  model delta->paint" in out
    assert "(2 turns)" in out
    assert "forge/floor model delta->paint: p50" in out
    assert "(30 frames)" in out
