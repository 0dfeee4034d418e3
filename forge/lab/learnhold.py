"""Test hook: park an approval or a pending learn run at a phase (never set in production).

`FORGE_LEARN_HOLD=<phase>=<path>` makes the process write `<path>.waiting` when it reaches the
phase and wait until `<path>` exists, so a test can kill it exactly there and show the next call
recovers. Phases: `approve-intent` (intent written, Formula not replaced), `approve-applied`
(Formula replaced, decision not recorded), `pending-saved` (suggestion saved, request not updated).
"""

from __future__ import annotations

import time
from pathlib import Path

from forge.testhooks import LEARN_HOLD

PHASES = ("approve-intent", "approve-applied", "pending-saved")


def hold(phase: str) -> None:
    value = LEARN_HOLD.value()
    if value is None:
        return
    wanted, _, path = value.partition("=")
    if wanted != phase:
        return
    Path(f"{path}.waiting").write_text(phase)
    while not Path(path).exists():
        time.sleep(0.05)
