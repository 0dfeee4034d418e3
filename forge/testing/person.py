"""`forge supervise` started as a person starts it, for browser tests and benches.

The process gets an XDG tree of its own under `root` (config, state with its token, runtime), the
forge.toml the caller writes, and a fixed port, so a restart keeps the page's URL. `start`
returns once the supervisor printed its `forge supervise: serving` line (it prints it when the
socket listens); `stop` signals it and waits. A page is paired with the token it made on its
first start, as after opening `forge pair`'s URL once.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

SERVING = "forge supervise: serving "
STOP_S = 60.0
"""How long a stopping supervisor may take on a loaded machine (its workers stop first)."""


def free_port() -> int:
    """A port nothing listens on now (the supervisor binds it a moment later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


class SupervisorProcess:
    """One `forge supervise` with its own XDG tree under `root` and `config_text` as forge.toml."""

    def __init__(self, root: Path, config_text: str, env: Mapping[str, str] = {}) -> None:
        self.root = root
        self.port = free_port()
        self.config = root / "forge.toml"
        self.config.write_text(config_text, encoding="utf-8")
        self.env = dict(
            os.environ,
            XDG_CONFIG_HOME=str(root / "config"),
            XDG_STATE_HOME=str(root / "state"),
            XDG_RUNTIME_DIR=str(root / "runtime"),
            **env,
        )
        self.env.pop("FORGE_CONFIG", None)
        for name in ("config", "state", "runtime"):
            (root / name).mkdir(mode=0o700, exist_ok=True)
        self.process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def token(self) -> str:
        """The token `forge supervise` made on its first start (what `forge pair` prints)."""
        return (self.root / "state" / "forge" / "token").read_text(encoding="utf-8").strip()

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "forge.cli", "supervise", "--config", str(self.config),
             "--port", str(self.port)],
            env=self.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith(SERVING):
            raise RuntimeError(f"forge supervise did not start: {line!r}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(sig)
            process.wait(timeout=STOP_S)
        if process.stdout is not None:
            process.stdout.close()
