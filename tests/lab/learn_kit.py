"""Learning's test kit: a Formula with a scripted learn atom, finished cohort runs written as
`forge evaluate --cohort` leaves them (activation pins, frozen inputs, attempt records), and the
`forge learn` / `forge suggestion` command lines against a Lab of the test's own."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge.attempt.record import AttemptRecord, FailedCommand, Invocation, Usage, dumps_record

FAKE_LEARN = Path(__file__).resolve().parent / "fake_learn.py"


def formula_text(name: str, ctl: Path | None, *, timeout_ms: int = 1000) -> str:
    atoms: list[dict[str, Any]] = [
        {"id": "code", "role": "coding", "command": ["true"], "timeoutMs": timeout_ms, "model": "m"}
    ]
    if ctl is not None:
        atoms.append(
            {
                "id": "learn",
                "role": "learn",
                "command": [sys.executable, str(FAKE_LEARN), str(ctl)],
                "timeoutMs": 60_000,
            }
        )
    return json.dumps({"schemaVersion": 1, "name": name, "atoms": atoms}, indent=1) + "\n"


def record(
    index: int,
    sha: str,
    *,
    kind: str = "timeout",
    finished: str | None = None,
    invalid: str | None = None,
) -> AttemptRecord:
    """A finished record that exhibits `kind`: timeout, scope, protected, or ok."""
    timed_out = kind == "timeout"
    return AttemptRecord(
        schema_version=1,
        task="t1",
        variant="a",
        repetition=index,
        attempt_id=f"t1.a.rep-{index}.{index:012x}",
        formula_sha256=sha,
        plan_sha256="0" * 64,
        pinned_model="m",
        started_at="2026-01-01T00:00:00Z",
        outcome="timed-out" if timed_out else "completed",
        timed_out=timed_out,
        invocations=[
            Invocation(
                id=f"x/coding-{index}",
                outcome="timed-out" if timed_out else "completed",
                terminal_reason=None,
                error=None,
                exit_code=None if timed_out else 0,
                timed_out=timed_out,
                classification=None,
                resumed=None,
                elapsed_ms=1000,
                usage=Usage(cost_usd=None, model="m", cost_basis=None),
            )
        ],
        scope_ok=kind != "scope",
        correct=kind == "ok",
        failed_check_output=[
            FailedCommand(
                phase="check",
                view="protected",
                id="pytest",
                exit_code=1,
                timed_out=False,
                stdout_tail="FAILED tests/test_calc.py::test_mul",
                stderr_tail="",
            )
        ]
        if kind == "protected"
        else [],
        invalid=invalid,
        finished_at=finished or f"2026-01-01T00:{index // 60:02d}:{index % 60:02d}Z",
    )


@dataclass
class LearnKit:
    root: Path
    ctl: Path = field(init=False)
    lab: Path = field(init=False)
    formula: Path = field(init=False)
    runs: int = 0

    def __post_init__(self) -> None:
        self.ctl = self.root / "ctl"
        self.lab = self.root / "lab"
        self.ctl.mkdir()
        self.formula = self.root / "recipes" / "a.yaml"
        self.formula.parent.mkdir()
        self.formula.write_text(formula_text("a", self.ctl))

    @property
    def sha(self) -> str:
        return hashlib.sha256(self.formula.read_bytes()).hexdigest()

    def run(self, kinds: list[str], *, start: int = 1) -> Path:
        """A finished cohort run of variant `a` under the Formula's current bytes."""
        self.runs += 1
        out = self.root / f"run-{self.runs}"
        data = self.formula.read_bytes()
        (out / "inputs").mkdir(parents=True)
        (out / "inputs" / "a.yaml").write_bytes(data)
        pins = {"a.yaml": self.sha}
        (out / "activation.json").write_text(json.dumps({"digest": "d" * 64, "inputs": pins}))
        for offset, kind in enumerate(kinds):
            index = start + offset
            folder = out / "attempts" / "t1" / "a" / f"rep-{index}"
            folder.mkdir(parents=True)
            folder.joinpath("attempt.json").write_bytes(
                dumps_record(record(index, self.sha, kind=kind))
            )
            folder.joinpath("changes.json").write_text('{"schemaVersion": 1, "paths": []}\n')
        return out

    def mode(self, mode: str) -> None:
        (self.ctl / "learn-mode").write_text(mode)

    def calls(self) -> int:
        path = self.ctl / "learn-calls.jsonl"
        return len(path.read_text().splitlines()) if path.exists() else 0

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "FORGE_LAB_DIR": str(self.lab), **extra}

    def forge(self, *argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "forge.cli", *argv],
            capture_output=True,
            text=True,
            env=self.env(**extra),
            check=False,
            timeout=120,
        )

    def requests(self) -> list[dict[str, Any]]:
        folder = self.lab / "learn-requests"
        return [json.loads(p.read_text()) for p in sorted(folder.glob("lr-*.json"))]

    def suggestions(self) -> list[dict[str, Any]]:
        folder = self.lab / "suggestions"
        return [
            json.loads(p.read_text())
            for p in sorted(folder.glob("sg-*.json"))
            if not p.name.endswith(".approving.json")
        ]
