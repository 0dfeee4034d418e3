"""Deploying the sh shim (package data) as `gh` in `$FORGE_HOME/bin`."""

from __future__ import annotations

import os
import sys
from importlib import resources
from pathlib import Path

from forge.files import write_atomic
from forge.health.settings import Settings


def shim_text(python: str = sys.executable) -> bytes:
    """The shim with this interpreter baked in for the paths that need Python."""
    text = resources.files("forge.health").joinpath("shim/gh.sh").read_text()
    return text.replace("@FORGE_PYTHON@", python).encode()


def install(settings: Settings, directory: Path | None = None) -> Path:
    """Write `<dir>/gh` (executable) and create the state dir, so recording starts at once."""
    target_dir = directory if directory is not None else settings.home / "bin"
    target = target_dir / "gh"
    write_atomic(target, shim_text())
    os.chmod(target, 0o755)
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    return target
