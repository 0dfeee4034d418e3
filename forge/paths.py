"""Where forge keeps its files (XDG base directories).

The state and runtime folders are the person's alone (0700, `forge.filemodes`); the files below
that hold a secret or what a person did are the ones `forge config check` looks at.
"""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / fallback


def config_file() -> Path:
    """The forge.toml that is read when neither --config nor FORGE_CONFIG names one."""
    return _xdg("XDG_CONFIG_HOME", ".config") / "forge" / "forge.toml"


def state_dir() -> Path:
    """Logs and durable state: `$XDG_STATE_HOME/forge`."""
    return _xdg("XDG_STATE_HOME", ".local/state") / "forge"


def log_file() -> Path:
    """forge.log: the supervisor, its workers and the client verbs append to it."""
    return state_dir() / "forge.log"


def token_file() -> Path:
    """The socket's token (`forge.access.token`)."""
    return state_dir() / "token"


def tls_dir() -> Path:
    """`forge supervise --tls self-signed`'s certificate and private key."""
    return state_dir() / "tls"


def runtime_dir() -> Path:
    """Sockets live here; `$XDG_RUNTIME_DIR/forge`, else a per-user folder in /tmp."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    root = Path(base) / "forge" if base else Path(f"/tmp/forge-{os.getuid()}")
    return root


def browser_profile_dir(profile_key: str) -> Path:
    """Where a browser profile `<org>/<name>` keeps its Chromium data, uploads and downloads."""
    org, _, name = profile_key.partition("/")
    return state_dir() / "browser" / (org or "default") / (name or "default")


def sound_dir() -> Path:
    """The sound server's private directory: its socket, `daemon.conf`, its runtime files."""
    return runtime_dir() / "sound"
