"""The Lab's own directory: suggestions, learn requests, the runs it has seen, and its locks.

`--lab DIR`, else `$FORGE_LAB_DIR`, else `$XDG_STATE_HOME/forge/lab`. `forge evaluate --cohort`
registers each run (its `--out` and the Formula file behind each variant) in `runs.jsonl`, so the
recurring-failure rules and `forge learn` find finished records and the Formula they ran.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from forge import paths

LAB_DIR_ENV = "FORGE_LAB_DIR"
RUNS_FILE = "runs.jsonl"


def lab_dir(override: str | None = None, env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if override:
        return Path(override).absolute()
    if env.get(LAB_DIR_ENV):
        return Path(env[LAB_DIR_ENV]).absolute()
    return paths.state_dir() / "lab"


@contextlib.contextmanager
def locked(path: Path, *, blocking: bool = True) -> Iterator[bool]:
    """An exclusive flock on `path` (created); yields False when non-blocking and busy."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


@dataclass(frozen=True)
class RegisteredFormula:
    variant: str
    path: str
    sha256: str


@dataclass(frozen=True)
class RegisteredRun:
    out: str
    formulas: tuple[RegisteredFormula, ...]


def register_run(lab: Path, out: Path, formulas: list[RegisteredFormula]) -> None:
    """Append one line; readers take the newest line per run."""
    lab.mkdir(parents=True, exist_ok=True)
    line = json.dumps(
        {
            "out": str(out.resolve()),
            "formulas": [
                {"variant": f.variant, "path": f.path, "sha256": f.sha256} for f in formulas
            ],
        }
    )
    with locked(lab / "runs.lock"), (lab / RUNS_FILE).open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def registered_runs(lab: Path) -> list[RegisteredRun]:
    """Every run the Lab has seen, newest registration per `out`, in first-seen order."""
    try:
        text = (lab / RUNS_FILE).read_text(encoding="utf-8")
    except OSError:
        return []
    runs: dict[str, RegisteredRun] = {}
    for line in text.splitlines():
        try:
            item = json.loads(line)
            run = RegisteredRun(
                out=str(item["out"]),
                formulas=tuple(
                    RegisteredFormula(str(f["variant"]), str(f["path"]), str(f["sha256"]))
                    for f in item["formulas"]
                ),
            )
        except (ValueError, KeyError, TypeError):
            continue
        runs[run.out] = run
    return list(runs.values())
