"""An attempt's spec as plain JSON, for runners in other processes (workers, Dask).

Only names and paths travel; the runner reloads the cohort from the run's frozen `<out>/inputs/`,
so it works from the same verified bytes the scheduler approved, and settings are re-derived from
the caller's environment the same way the CLI derives them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from forge.attempt.cohort import load_cohort
from forge.attempt.coordinates import Coordinate
from forge.attempt.layout import ATTEMPTS_DIR, COHORT_INPUT, INPUTS_DIR
from forge.attempt.run import AttemptSpec
from forge.attempt.settings import settings_from_env


def spec_to_wire(spec: AttemptSpec, out: Path) -> dict[str, Any]:
    c = spec.coordinate
    return {
        "out": str(out),
        "coordinate": {
            "index": c.index,
            "task": c.task,
            "repetition": c.repetition,
            "variant": c.variant,
        },
        "attemptId": spec.attempt_id,
        "source": str(spec.source),
        "origin": spec.origin,
        "callerEnv": spec.caller_env,
        "keepWorkspaces": spec.keep_workspaces,
        "parallel": spec.parallel,
    }


def spec_from_wire(wire: dict[str, Any]) -> AttemptSpec:
    out = Path(wire["out"])
    inputs = out / INPUTS_DIR
    cohort = load_cohort(inputs / COHORT_INPUT)
    c = wire["coordinate"]
    coordinate = Coordinate(c["index"], c["task"], c["repetition"], c["variant"])
    caller_env: dict[str, str] = wire["callerEnv"]
    return AttemptSpec(
        coordinate=coordinate,
        attempt_id=wire["attemptId"],
        attempt_dir=out / ATTEMPTS_DIR / coordinate.rel_dir,
        inputs_dir=inputs,
        pins=cohort.pins(),
        task=next(t for t in cohort.tasks if t.spec.name == coordinate.task),
        variant=next(v for v in cohort.variants if v.spec.name == coordinate.variant),
        source=Path(wire["source"]),
        origin=wire["origin"],
        caller_env=caller_env,
        settings=settings_from_env(caller_env),
        keep_workspaces=wire["keepWorkspaces"],
        parallel=wire["parallel"],
    )
