"""Where the client verbs dial: `ws://<bind>:<port>/socket` from forge.toml, loopback for a
wildcard bind; a forge.toml that does not load is a bad input (exit 2) before any dial."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from forge.client.cli import socket_url
from forge.config import load_config

from .test_status_cli import forge


@pytest.mark.parametrize(
    ("bind", "url"),
    [
        ("127.0.0.1", "ws://127.0.0.1:8790/socket"),
        ("0.0.0.0", "ws://127.0.0.1:8790/socket"),
        ("::", "ws://[::1]:8790/socket"),
        ("::1", "ws://[::1]:8790/socket"),
        ("10.1.2.3", "ws://10.1.2.3:8790/socket"),
        ("localhost", "ws://localhost:8790/socket"),
    ],
)
def test_the_url_follows_server_bind_and_port(tmp_path: Path, bind: str, url: str) -> None:
    defaults = load_config(tmp_path / "missing.toml").config.server
    assert defaults.port == 8790
    assert socket_url(dataclasses.replace(defaults, bind=bind)) == url


async def test_a_forge_toml_that_does_not_load_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "forge.toml"
    config.write_text('[server]\nport = "x"\n', encoding="utf-8")
    code, out, err = await forge("status", "--config", str(config))
    assert (code, out) == (2, "")
    assert err.startswith("forge: ")
    assert "server.port" in err
