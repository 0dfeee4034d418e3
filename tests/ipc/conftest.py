"""A worker manager per test, with timings that keep real-process tests short."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from forge.ipc.manager import WorkerManager

from .helpers import TEST_TIMINGS


@pytest.fixture
async def manager(forge_dirs: dict[str, Path]) -> AsyncIterator[WorkerManager]:
    async with WorkerManager(timings=TEST_TIMINGS) as running:
        yield running
