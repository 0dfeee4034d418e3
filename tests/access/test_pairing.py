"""Pairing: which host the URL names, the token in its fragment, the QR code, and the verbs."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import segno

from forge.access.pairing import Reach, announce, page_host, page_url, pairing_url, qr_text
from forge.access.token import ensure_token, read_token
from forge.config import load_config

LAN = ("127.0.0.1", "::1", "fe80::1", "169.254.3.4", "192.168.1.20", "10.0.0.2")


@pytest.mark.parametrize(
    ("reach", "host"),
    [
        (Reach("https", "0.0.0.0", 8790, ("box.tail1234.ts.net",), LAN), "box.tail1234.ts.net"),
        (Reach("https", "100.64.0.7", 8790, ("localhost", "box.ts.net"), LAN), "box.ts.net"),
        (Reach("https", "0.0.0.0", 8790, ("*.example.net", "10.0.0.9"), LAN), "192.168.1.20"),
        (Reach("http", "100.64.0.7", 8790, (), LAN), "100.64.0.7"),
        (Reach("http", "127.0.0.1", 8790, (), LAN), "127.0.0.1"),
        (Reach("http", "0.0.0.0", 8790, (), LAN), "192.168.1.20"),
        (Reach("http", "::", 8790, (), ("::1", "127.0.0.1", "10.1.1.1")), "10.1.1.1"),
    ],
)
def test_page_host(reach: Reach, host: str) -> None:
    assert page_host(reach) == host


def test_page_and_pairing_urls() -> None:
    reach = Reach("https", "::", 9000, (), ())
    assert page_url(reach, "fd00::5") == "https://[fd00::5]:9000/"
    assert pairing_url("https://a.test/", "T0k") == "https://a.test/#token=T0k"
    assert pairing_url("https://a.test/#old", "T0k") == "https://a.test/#token=T0k"


def test_the_qr_code_holds_the_url() -> None:
    url = "https://box.ts.net:8790/#token=" + "k" * 43
    drawn = qr_text(url)
    code = segno.make(url, error="m")
    width = code.symbol_size()[0]  # modules plus the quiet zone
    lines = drawn.splitlines()
    assert {len(line) for line in lines} == {width}
    assert len(lines) == (code.symbol_size()[1] + 1) // 2  # two module rows per line


def forge(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forge.cli", *args],
        capture_output=True,
        text=True,
        env=env or dict(os.environ),
        check=False,
    )


@pytest.mark.usefixtures("forge_dirs")
def test_token_show_rotate_and_pair(tmp_path: Path) -> None:
    shown = forge("token", "show")
    assert shown.returncode == 0
    token = shown.stdout.strip()
    assert token == read_token()
    assert forge("token", "show").stdout.strip() == token
    config = tmp_path / "forge.toml"
    config.write_text('[server]\nbind = "192.168.7.7"\nport = 9100\n', encoding="utf-8")
    paired = forge("pair", "--config", str(config))
    assert paired.returncode == 0, paired.stderr
    assert f"http://192.168.7.7:9100/#token={token}\n" in paired.stdout
    assert "no microphone" in paired.stdout
    assert "▀" in paired.stdout or "▄" in paired.stdout
    rotated = forge("token", "rotate")
    assert rotated.returncode == 0
    assert token not in rotated.stdout
    new = read_token()
    assert new is not None
    assert new != token
    proxied = forge("pair", "--config", str(config), "--url", "https://forge.example.net/")
    assert f"  https://forge.example.net/#token={new}\n" in proxied.stdout


@pytest.mark.usefixtures("forge_dirs")
def test_pair_refuses_without_a_token(tmp_path: Path) -> None:
    config = tmp_path / "forge.toml"
    config.write_text('[server]\nauth = "none"\n', encoding="utf-8")
    refused = forge("pair", "--config", str(config))
    assert refused.returncode == 2
    assert 'auth = "none"' in refused.stderr


@pytest.mark.usefixtures("forge_dirs")
def test_supervise_prints_the_token_only_to_a_terminal(tmp_path: Path) -> None:
    config = tmp_path / "forge.toml"
    config.write_text('[server]\nbind = "0.0.0.0"\n', encoding="utf-8")
    server = load_config(config).config.server
    token = ensure_token()
    journal = io.StringIO()
    announce(journal, server, terminal=False)
    assert journal.getvalue() == ""  # a journal gets the one listening line, never the token
    screen = io.StringIO()
    announce(screen, server, terminal=True)
    assert f"#token={token}" in screen.getvalue()
    assert "█" in screen.getvalue()  # a wildcard bind: a phone may reach it, so the QR code
