"""Where a run keeps its files under `--out`: what an attempt runner in another process reads."""

from __future__ import annotations

INPUTS_DIR = "inputs"
"""The frozen inputs (0400) every attempt reads, copied there on approval."""
COHORT_INPUT = "cohort.json"
"""The cohort file's name under `INPUTS_DIR`."""
ATTEMPTS_DIR = "attempts"
"""`<task>/<variant>/rep-<n>/` per attempt, under this directory."""
