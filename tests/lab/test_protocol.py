"""The attempt-runner protocol as plain data: what crosses to a runner and what it refuses."""

from __future__ import annotations

import pytest

from forge.attempt.coordinates import Coordinate
from forge.attempt.handoff import Handoff
from forge.ipc.errors import RequestFailed
from forge.ipc.protocol import decode_request
from forge.workers.lab.protocol import LAB_ATTEMPT, Cancel, Run

HANDOFF = Handoff(
    out="/runs/out",
    coordinate=Coordinate(3, "t1", 2, "b"),
    attempt_id="t1.b.rep-2.0123456789ab",
    source="/src",
    origin=None,
    caller_env={"PATH": "/usr/bin"},
    keep_workspaces=False,
    parallel=2,
    hidden=("/runs/out", "/src"),
)


def test_a_run_request_crosses_as_camel_case_builtins_and_back() -> None:
    args = Run(attempt=HANDOFF).args()
    assert args == {
        "attempt": {
            "out": "/runs/out",
            "coordinate": {"index": 3, "task": "t1", "repetition": 2, "variant": "b"},
            "attemptId": "t1.b.rep-2.0123456789ab",
            "source": "/src",
            "origin": None,
            "callerEnv": {"PATH": "/usr/bin"},
            "keepWorkspaces": False,
            "parallel": 2,
            "hidden": ("/runs/out", "/src"),
            "limits": {
                "pids": 1024,
                "memoryBytes": 4 << 30,
                "diskBytes": 4 << 30,
                "openFiles": 4096,
            },
            "agentCli": None,
        }
    }
    assert decode_request(Run, args) == Run(attempt=HANDOFF)
    assert Cancel(attempt_id="x").args() == {"attemptId": "x"}
    assert list(LAB_ATTEMPT.methods()) == ["run", "cancel"]


def test_a_malformed_run_is_refused_naming_the_field() -> None:
    args = Run(attempt=HANDOFF).args()
    args["attempt"]["parallel"] = "2"
    with pytest.raises(RequestFailed) as refused:
        decode_request(Run, args)
    assert refused.value.code == "bad_request"
    assert "$.attempt.parallel" in refused.value.message
