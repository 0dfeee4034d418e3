"""forge.log's rotation: past its bound the file is renamed forge.log.1 (older copies shifting up,
the oldest deleted), the newest lines stay in forge.log, and several processes appending to it at
once lose and repeat no line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from forge.logs import LOG_FILE_ENV, LOG_ROTATION_ENV

WRITER = """
import sys
from forge.logs import configure_from_env, get_logger
configure_from_env(process=sys.argv[1])
log = get_logger("writer")
for n in range(int(sys.argv[2])):
    log.info("line_written", n=n, padding="x" * 40)
"""
"""A process that logs as a worker does: where and how the environment says."""


def write(log_file: Path, rotation: str, *writers: tuple[str, int]) -> None:
    """Run one writer process per (name, lines), all at once, and wait for them."""
    env = {LOG_FILE_ENV: str(log_file), LOG_ROTATION_ENV: rotation}
    processes = [
        subprocess.Popen([sys.executable, "-c", WRITER, name, str(lines)], env=env)
        for name, lines in writers
    ]
    assert [process.wait(timeout=120) for process in processes] == [0] * len(processes)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_past_the_bound_the_log_rotates_keeping_the_newest_lines(tmp_path: Path) -> None:
    log_file = tmp_path / "forge.log"
    write(log_file, "2000:2", ("worker", 300))
    names = sorted(path.name for path in tmp_path.iterdir())
    assert names == ["forge.log", "forge.log.1", "forge.log.2"]
    newest = [records(tmp_path / name) for name in ("forge.log.2", "forge.log.1", "forge.log")]
    numbers = [record["n"] for file in newest for record in file]
    assert numbers == list(range(numbers[0], 300))
    assert newest[2][-1]["record"] == "line_written"
    for path in tmp_path.iterdir():
        assert path.stat().st_size <= 2000


def test_writers_appending_at_once_rotate_it_once_each_time_and_lose_no_line(
    tmp_path: Path,
) -> None:
    log_file = tmp_path / "forge.log"
    writers = [(f"worker-{i}", 400) for i in range(3)]
    write(log_file, "4000:100", *writers)
    files = sorted(
        tmp_path.iterdir(),
        key=lambda path: -int(path.name.removeprefix("forge.log.") if path != log_file else 0),
    )
    assert files[-1] == log_file
    assert len(files) > 10
    seen: dict[str, list[int]] = {name: [] for name, _ in writers}
    for path in files:
        for record in records(path):
            seen[record["process"]].append(record["n"])
    # Oldest file first, each writer's lines are in the order it wrote them, each exactly once.
    assert seen == {name: list(range(lines)) for name, lines in writers}
    longest = max(len(line) for path in files for line in path.read_bytes().splitlines())
    for path in files[:-1]:
        assert path.stat().st_size <= 4000 + len(writers) * (longest + 1)
