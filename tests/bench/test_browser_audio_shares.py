"""The browser audio bench's relay shares (bench/browser_audio.py): forge's supervisor and the
bare websockets server are read with the same arithmetic, so their ratio compares like with like."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "browser_audio.py"
bench = runpy.run_path(str(BENCH), run_name="browser_audio_bench")
relay, times = bench["relay"], bench["times"]


def test_shares_are_over_the_process_with_no_one_listening() -> None:
    shares = relay(0.5, 2.5, 4.5)
    assert (shares.one, shares.four) == (2.0, 4.0)
    assert shares.per_viewer == pytest.approx(1.0)
    assert shares.marginal == pytest.approx(2 / 3)


def test_a_floor_that_measured_nothing_gives_no_ratio() -> None:
    assert times(2.0, 0.8) == "2.5x"
    assert times(2.0, 0.0) == "n/a"
    assert times(2.0, -0.1) == "n/a"
