"""`examples/lab/` runs as-is: its README's three commands, in CI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .kit import PYTHON

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lab"


def test_the_example_cohort_runs_as_written(tmp_path: Path, forge_dirs: dict[str, Path]) -> None:
    del forge_dirs
    made = subprocess.run(
        [sys.executable, str(EXAMPLE / "make_repo.py"), str(tmp_path / "textstats")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    evaluate = [
        *(PYTHON, "-m", "forge.cli", "evaluate"),
        *("--cohort", str(EXAMPLE / "cohort" / "cohort.json")),
        *("--source", str(tmp_path / "textstats"), "--out", str(tmp_path / "run")),
    ]
    preview = subprocess.run(evaluate, capture_output=True, text=True, timeout=120, check=False)
    assert preview.returncode == 0, preview.stderr
    digest = preview.stdout.split("--approve ")[-1].split()[0]
    run = subprocess.run(
        [*evaluate, "--approve", digest, "--parallel", "2"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 2, run.stderr
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["status"] == "complete"
    assert {v["name"]: v["correct"] for v in report["variants"]} == {"literal": 2, "careful": 4}
    assert [row["cells"] for row in report["tasks"]] == [
        {"literal": ["failed", "failed"], "careful": ["accepted", "accepted"]},
        {"literal": ["accepted", "accepted"], "careful": ["accepted", "accepted"]},
    ]
