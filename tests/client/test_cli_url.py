"""Where the client verbs dial: `ws://<bind>:<port>/socket` from forge.toml, loopback for a
wildcard bind; while forge.toml does not load, where its supervisor last listened, else the
default, with the file's refusal on stderr."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from forge.config import load_config, page_url, socket_url

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


def test_the_page_is_at_the_same_host_and_port(tmp_path: Path) -> None:
    defaults = load_config(tmp_path / "missing.toml").config.server
    assert page_url(dataclasses.replace(defaults, bind="::")) == "http://[::1]:8790/"


async def test_a_forge_toml_that_does_not_load_falls_back_to_the_default(
    tmp_path: Path, forge_dirs: dict[str, Path]
) -> None:
    """Issue 13 item 12: a client verb needs only the socket's address, so a forge.toml that does
    not load (and no supervisor ever listened for) is said on stderr and the default is dialled,
    not refused with exit 2 (attach stops at its missing tty, before dialling)."""
    config = tmp_path / "forge.toml"
    config.write_text('[server]\nport = "x"\n', encoding="utf-8")
    code, out, err = await forge("attach", "acme/proj/lead", "--config", str(config))
    assert (code, out) == (2, "")
    assert err == (
        f'forge: {config} line 2: server.port: expected an integer from 1 to 65535, got "x"\n'
        "forge: forge.toml does not load; dialling ws://127.0.0.1:8790/socket (the default "
        "address)\nforge: forge attach needs a terminal on its standard input\n"
    )
