"""The runs a supervisor started, kept in its state directory so a restarted one lists them again.

One file per run, `<state>/lab-runs/<run>.json`: its `LabRun` row as the `lab` subject showed it
when it started and when it ended (the attempts' records stay in the run's own `--out`). A row
still `running` on disk belonged to a supervisor that was killed before the run ended; it is
listed as aborted, as `forge evaluate` reports a lost supervisor (exit 1), and the approve command
resumes it.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from forge.files import write_atomic
from forge.lab.live import LiveRun
from forge.logs import get_logger
from forge.wire.lab import LabRun

log = get_logger(__name__)

FOLDER = "lab-runs"
"""The folder of the state directory the rows are kept in."""
LOST_REASON = "the supervisor running it stopped before it ended; the approve command resumes it"
LOST_EXIT = 1
"""What `forge evaluate` exits with when the supervisor running its run is lost."""

_RUN_ID = re.compile(r"[0-9a-f]{12}")
"""A run's id as `lab_start` makes it: the only file names read back."""


def save(folder: Path, row: LabRun) -> None:
    """Keep `row` (without live process trees, which mean nothing once read back)."""
    kept = msgspec.structs.replace(
        row, attempts=[msgspec.structs.replace(a, processes=None) for a in row.attempts]
    )
    write_atomic(folder / f"{row.run}.json", msgspec.json.encode(kept), mode=0o600)


def forget(folder: Path, run: str) -> None:
    (folder / f"{run}.json").unlink(missing_ok=True)


def load(folder: Path) -> list[LiveRun]:
    """The kept runs, oldest first; a file that is not a run's row is left alone and logged."""
    runs: list[LiveRun] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if not _RUN_ID.fullmatch(path.stem):
            continue
        try:
            row = msgspec.json.decode(path.read_bytes(), type=LabRun)
        except (OSError, msgspec.DecodeError) as error:
            log.warning("lab_run_unreadable", path=str(path), reason=str(error))
            continue
        if row.run != path.stem:
            log.warning("lab_run_unreadable", path=str(path), reason=f"it holds run {row.run}")
            continue
        live = LiveRun(row, [])
        if not live.ended:
            live.end("aborted", None, LOST_REASON, LOST_EXIT)
        runs.append(live)
    return sorted(runs, key=lambda live: live.row.started_ms)
