"""A Lab run in a web test's supervisor: the Lab kit's cohort (tests/lab/kit.py) handed to that
`forge supervise` by `forge evaluate --approve --url`, the token found through the supervisor's
own XDG directories, as `forge pair` and the CLI find it on a workstation."""

from __future__ import annotations

import subprocess

from tests.lab.kit import HELD_MS, Kit, wait_for

from .conftest import Supervised

XDG = ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR")


def held_cohort(kit: Kit, *, b_held: bool = True) -> None:
    """Two repetitions of one task; variant a's harness (and b's, unless `b_held` is false)
    held at its gate until `<ctl>/go` exists; b makes no change (a failed attempt)."""
    held = {"FAKE_GATE": "1"}
    kit.cohort(
        a=kit.formula("a", knobs=held, timeout_ms=HELD_MS),
        b=kit.formula(
            "b",
            knobs={**(held if b_held else {}), "FAKE_ACTION": "none", "FAKE_OUTCOME": "no-change"},
            timeout_ms=HELD_MS,
        ),
        tasks={"t1": kit.plan("t1")},
        repetitions=2,
    )


def start_run(
    kit: Kit, supervised: Supervised, *, parallel: int, held: int
) -> subprocess.Popen[str]:
    """`forge evaluate --approve` against `supervised`, once `held` harnesses wait at the gate."""
    url = f"ws://127.0.0.1:{supervised.port}/socket"
    dirs = {name: supervised.env[name] for name in XDG}
    preview = kit.cli("--url", url, env=dirs)
    assert preview.returncode == 0, preview.stderr
    assert f"Runs in: the forge supervisor at {url}" in preview.stdout
    digest = preview.stdout.split("--approve ")[-1].split()[0]
    process = kit.start("--approve", digest, "--parallel", str(parallel), "--url", url, env=dirs)
    wait_for(kit.ctl, "started-*", held, process)
    return process
