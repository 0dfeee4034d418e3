"""Every `forge evaluate` usage error exits 1 (2 means "some attempt was not correct" there) and
names the subcommand and what was wrong."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .kit import PYTHON


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("replay", "--pr"), "forge evaluate replay: error: argument --pr: expected one argument"),
        (("replay", "--bogus"), "forge evaluate replay: error: unrecognized arguments: --bogus"),
        (("--parallel",), "forge evaluate: error: argument --parallel: expected one argument"),
        (("--bogus",), "forge evaluate: error: unrecognized arguments: --bogus"),
        (
            ("frob",),
            "forge evaluate: error: argument [init | pin | replay | cluster-certs]: invalid choice",
        ),
        (("init",), "forge evaluate init: error: the following arguments are required: --source"),
        (("pin", "a", "b"), "forge evaluate pin: error: unrecognized arguments: b"),
    ],
)
def test_a_usage_error_exits_1_naming_what_was_wrong(
    forge_dirs: dict[str, Path], argv: tuple[str, ...], message: str
) -> None:
    del forge_dirs
    result = subprocess.run(
        [PYTHON, "-m", "forge.cli", "evaluate", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
