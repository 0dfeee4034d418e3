"""Fixtures every area's tests share: an isolated home for forge's files, a free port, and
real `forge supervise` processes (`supervise`)."""

from __future__ import annotations

import asyncio
import signal
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from forge import eventloop
from forge.testing.supervised import Start, Supervisors


def pytest_configure(config: pytest.Config) -> None:
    """Children get SIGINT's default action even when the suite itself was started with it
    ignored (a background job of a non-interactive shell is), as Ctrl-C tests need."""
    del config
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
    """In-process tests run on the loop forge's processes run on."""
    del config, item
    return {"uvloop": eventloop.new_event_loop}


def _point_forge_dirs(root: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Point every XDG directory forge reads at a fresh tree in `root` (subprocesses inherit it)."""
    dirs = {
        "config": root / "xdg-config",
        "state": root / "xdg-state",
        "runtime": root / "xdg-runtime",
    }
    for path in dirs.values():
        path.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(dirs["config"]))
    monkeypatch.setenv("XDG_STATE_HOME", str(dirs["state"]))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(dirs["runtime"]))
    monkeypatch.delenv("FORGE_CONFIG", raising=False)
    return dirs


@pytest.fixture
def forge_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Every XDG directory forge reads in this test's own temporary tree."""
    return _point_forge_dirs(tmp_path, monkeypatch)


@pytest.fixture(scope="module")
def module_forge_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """`forge_dirs` for one run that several tests of a module share."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield _point_forge_dirs(tmp_path_factory.mktemp("forge-dirs"), monkeypatch)


@pytest.fixture
def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
async def supervise(
    forge_dirs: dict[str, Path], free_port: int, tmp_path: Path
) -> AsyncIterator[Start]:
    """`await supervise(toml)` starts a supervisor with drills on; all are stopped at the end."""
    supervisors = Supervisors(tmp_path / "forge.toml", free_port)
    yield supervisors.start
    await supervisors.stop_all()
