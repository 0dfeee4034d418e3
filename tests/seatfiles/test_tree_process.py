"""The tree process (`python -m forge.supervisor.seatfiles.treeside`) ends quietly on SIGINT, as it
does when the supervisor closes its stdin: exit 0, nothing on stderr."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import msgspec

from forge.supervisor.seatfiles.gitstate import Seen
from forge.supervisor.seatfiles.treeproto import ReadScan, ReadWork


def asked(ask: ReadWork | ReadScan) -> tuple[subprocess.Popen[bytes], bytes]:
    """A tree process started and asked `ask`: the process and its answer's line."""
    process = subprocess.Popen(
        [sys.executable, "-m", "forge.supervisor.seatfiles.treeside"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(msgspec.json.encode(ask) + b"\n")
    process.stdin.flush()
    return process, process.stdout.readline()


def test_sigint_ends_the_tree_process_quietly(tmp_path: Path) -> None:
    process, answer = asked(ReadWork(id=1, directory=str(tmp_path)))
    assert b'"id":1' in answer  # it serves: past its start-up
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert (process.returncode, err) == (0, b"")


def test_a_scan_answers_the_rows_not_the_status_entries(tmp_path: Path) -> None:
    """The supervisor draws the work row and the git layer; a busy tree's status entries (here
    300 untracked files) stay in the tree process: the answer names only the files of the
    layer's capped list."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for n in range(300):
        (tmp_path / f"new-{n}.txt").write_text("x\n")
    process, answer = asked(ReadScan(id=1, directory=str(tmp_path)))
    process.communicate(timeout=60)  # its stdin closed: it ends
    reply = msgspec.json.decode(answer)
    seen = msgspec.convert(reply["result"], Seen)
    assert seen.work.changed == 300
    assert answer.count(b"new-") < 300
