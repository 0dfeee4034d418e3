"""The tree process (`python -m forge.supervisor.treeside`) ends quietly on SIGINT, as it does when
the supervisor closes its stdin: exit 0, nothing on stderr."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import msgspec

from forge.supervisor.treeproto import ReadWork


def test_sigint_ends_the_tree_process_quietly(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "forge.supervisor.treeside"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(msgspec.json.encode(ReadWork(id=1, directory=str(tmp_path))) + b"\n")
    process.stdin.flush()
    assert b'"id":1' in process.stdout.readline()  # it serves: past its start-up
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert (process.returncode, err) == (0, b"")
