"""Which Claude Code CLI a `claude-code` atom runs: `[agent] cli_path`, else the agent SDK
wheel's bundled CLI, else `claude` on PATH, in the order an agent seat looks
(forge/workers/agent/locate.py); a lack refuses the run at preview, naming the fix.

The SDK's folder is found without importing it (the Lab never runs the SDK, only its CLI).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from forge.attempt.errors import LabRefusal

SDK_MODULE = "claude_agent_sdk"
INSTALL_HINT = "pip install 'forge-supervisor[agent]'"


def find_agent_cli(configured: Path | None, env: Mapping[str, str]) -> str:
    """The CLI's real path (the sandbox mounts that one file read-only)."""
    if configured is not None:
        if not configured.is_file() or not os.access(configured, os.X_OK):
            raise LabRefusal(
                f"[agent] cli_path {str(configured)!r} is not an executable file "
                "(unset it to run the CLI bundled with the agent SDK)"
            )
        return os.path.realpath(configured)
    spec = importlib.util.find_spec(SDK_MODULE)
    if spec is not None and spec.origin is not None:
        bundled = Path(spec.origin).parent / "_bundled" / "claude"
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return os.path.realpath(bundled)
    found = shutil.which("claude", path=env.get("PATH", os.defpath))
    if found is not None:
        return os.path.realpath(found)
    raise LabRefusal(
        "a claude-code atom needs the Claude Code CLI: the agent SDK here has no bundled CLI "
        f"and `claude` is not on PATH; {INSTALL_HINT} or set [agent] cli_path in forge.toml"
    )
