"""What an agent seat needs before it can start: the agent SDK and a Claude Code CLI.

Checked in the worker's `setup`, so a missing piece is a `WorkerConfigError` whose sentence
names the fix (the row is `failed` with it, never restarted into the same lack).
"""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path

from forge.ipc.errors import WorkerConfigError
from forge.workers.agent.protocol import INSTALL_COMMAND

SDK_MODULE = "claude_agent_sdk"


def seat_folder(cwd: str) -> Path:
    """The seat's directory, which must be a folder (the CLI runs there)."""
    path = Path(cwd)
    if not path.is_dir():
        raise WorkerConfigError(f"the agent seat's directory {cwd!r} is not a folder")
    return path


def require_sdk() -> Path:
    """The installed SDK's package folder, or a refusal naming the install command."""
    try:
        sdk = importlib.import_module(SDK_MODULE)
    except ImportError as error:
        raise WorkerConfigError(
            f"an agent seat needs Anthropic's agent SDK, which does not import here ({error}): "
            f"{INSTALL_COMMAND}"
        ) from None
    return Path(sdk.__file__ or "").parent


def find_cli(configured: str | None, sdk_folder: Path) -> Path:
    """The CLI to run: `[agent] cli_path` when set (it must be an executable file), else the
    SDK wheel's bundled CLI, else `claude` on PATH; a refusal says which was missing."""
    if configured is not None:
        path = Path(configured)
        if not path.is_file() or not os.access(path, os.X_OK):
            raise WorkerConfigError(
                f"[agent] cli_path {configured!r} is not an executable file "
                "(unset it to use the CLI bundled with the agent SDK)"
            )
        return path
    bundled = sdk_folder / "_bundled" / "claude"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return bundled
    found = shutil.which("claude")
    if found is not None:
        return Path(found)
    raise WorkerConfigError(
        "no Claude Code CLI: the agent SDK here has no bundled CLI and `claude` is not on PATH; "
        f"{INSTALL_COMMAND} (a wheel for this platform bundles it) or set [agent] cli_path"
    )
