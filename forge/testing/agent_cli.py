"""The environment that points a real Claude Code CLI at forge's scripted model server.

A test (or a browser test's `forge supervise`, whose agent workers inherit its environment) runs
the CLI with a fresh HOME and config dir, a test key and the quiet flags, and with none of an
outer session's model, proxy or Claude settings able to steer it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from forge.testing.model_server import QUIET_CLI_ENV


def steers_cli(name: str) -> bool:
    """Whether an environment variable of the outer session could steer the CLI."""
    return name.startswith(("ANTHROPIC_", "CLAUDE", "OTEL_")) or name.lower().endswith("_proxy")


def cli_env(model_url: str, root: Path) -> dict[str, str]:
    """What the CLI needs to talk to the model server at `model_url`, its HOME and config dir
    made under `root`."""
    home, config = root / "agent-home", root / "claude-config"
    home.mkdir(exist_ok=True)
    config.mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(config),
        "ANTHROPIC_BASE_URL": model_url,
        "ANTHROPIC_API_KEY": "test-key-not-a-secret",
        **QUIET_CLI_ENV,
    }


def unsteered(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without what `steers_cli` names."""
    return {name: value for name, value in env.items() if not steers_cli(name)}
