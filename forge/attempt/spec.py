"""What one attempt is given: plain data, so it can travel to a worker process or a Dask worker."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forge.attempt.cohort import Task, Variant
from forge.attempt.coordinates import Coordinate
from forge.attempt.settings import LabSettings


@dataclass(frozen=True)
class AttemptSpec:
    """Everything one attempt needs."""

    coordinate: Coordinate
    attempt_id: str
    attempt_dir: Path
    inputs_dir: Path
    pins: dict[str, str]
    task: Task
    variant: Variant
    source: Path
    origin: str | None
    caller_env: dict[str, str]
    settings: LabSettings
    keep_workspaces: bool = False
    parallel: int = 1
    hidden: tuple[str, ...] = ()
    """Paths the sandbox never shows, even inside an allowed folder: `--out`, `--source` and its
    local origins, the cohort's folder, forge's own directories (realpaths)."""
