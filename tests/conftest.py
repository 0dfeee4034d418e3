"""Fixtures every area's tests share: an isolated home for forge's files, and a free port."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest


@pytest.fixture
def forge_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Point every XDG directory forge reads at a fresh temporary tree (subprocesses inherit it)."""
    dirs = {
        "config": tmp_path / "xdg-config",
        "state": tmp_path / "xdg-state",
        "runtime": tmp_path / "xdg-runtime",
    }
    for path in dirs.values():
        path.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(dirs["config"]))
    monkeypatch.setenv("XDG_STATE_HOME", str(dirs["state"]))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(dirs["runtime"]))
    monkeypatch.delenv("FORGE_CONFIG", raising=False)
    return dirs


@pytest.fixture
def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
