"""The `supervise` fixture: a real `forge supervise` on a free port with its own forge.toml."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .harness import Start, Supervised


@pytest.fixture
async def supervise(
    forge_dirs: dict[str, Path], free_port: int, tmp_path: Path
) -> AsyncIterator[Start]:
    """`await supervise(toml)` starts a supervisor with drills on, logging every level; all are
    stopped at the end."""
    started: list[Supervised] = []

    async def start(
        toml: str = "",
        *,
        drills: bool = True,
        args: tuple[str, ...] = (),
        log_level: str | None = "debug",
    ) -> Supervised:
        config = tmp_path / "forge.toml"
        config.write_text(toml, encoding="utf-8")
        log = forge_dirs["state"] / "forge" / "forge.log"
        since = log.stat().st_size if log.exists() else 0
        env = dict(os.environ, FORGE_SUPERVISOR_DRILLS="1" if drills else "0")
        if log_level is not None:  # tests read debug records; None leaves forge.toml's level
            args = ("--log-level", log_level, *args)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "forge.cli", "supervise", "--config", str(config),
            "--port", str(free_port), *args,
            env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        supervised = Supervised(process, free_port, config, log, since)
        started.append(supervised)
        await supervised.record("socket_listening")
        return supervised

    yield start
    for supervised in started:
        await supervised.stop()
