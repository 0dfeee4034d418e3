"""bench/webclient.py on a few keys, a 1 MB flood and a two-second tab: the same code as the
recorded run. It starts a real supervisor (terminal host, a Chromium for the tab), a second
Chromium for the two pages and builds the floor page with web/'s esbuild, so it costs about a
minute of two busy cores: it runs only when asked,

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
        [sys.executable, "-P", str(ROOT / "bench" / "webclient.py"), "--keys", "5", "--mb", "1",
         "--repeats", "1", "--seconds", "2"],
        capture_output=True, text=True, timeout=540, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    out = result.stdout
    assert "forge  keystroke->paint" in out
    assert "floor  keystroke->paint" in out
    assert "(5 of 5 keys)" in out
    assert "forge/floor flood: last line" in out
    assert "drawn/received" in out
