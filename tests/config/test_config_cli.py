"""`forge config`: the real console script, its exit codes and what it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from forge.config import load_config

FORGE = Path(sys.executable).parent / "forge"


def forge(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(FORGE), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
        check=False,
    )


def test_check_accepts_a_good_file(tmp_path: Path) -> None:
    path = tmp_path / "forge.toml"
    path.write_text("[server]\nport = 9100\n")
    done = forge("config", "check", "--config", str(path))
    assert done.returncode == 0
    assert done.stdout == f"{path} loads (fingerprint {load_config(path).fingerprint})\n"


def test_check_refuses_a_bad_file_with_exit_code_2(tmp_path: Path) -> None:
    path = tmp_path / "forge.toml"
    path.write_text('# mine\n[server]\nbind = "127.0.0.1"\nport = "x"\n')
    done = forge("config", "check", "--config", str(path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        f'forge: {path} line 4: server.port: expected an integer from 1 to 65535, got "x"\n'
    )


def test_check_reads_forge_config_from_the_environment(forge_dirs: dict[str, Path]) -> None:
    missing = forge_dirs["config"] / "elsewhere.toml"
    done = forge("config", "check", env={"FORGE_CONFIG": str(missing)})
    assert done.returncode == 0
    assert done.stdout.startswith(f"{missing} is missing: the defaults apply")


def test_show_prints_the_settings_document(tmp_path: Path) -> None:
    path = tmp_path / "forge.toml"
    path.write_text('[[projects]]\norg = "acme"\nname = "forge"\npath = "/srv/forge"\n')
    done = forge("config", "show", "--config", str(path))
    assert done.returncode == 0
    assert json.loads(done.stdout) == load_config(path).document


def test_defaults_print_a_file_that_loads_as_the_defaults(tmp_path: Path) -> None:
    done = forge("config", "defaults")
    assert done.returncode == 0
    path = tmp_path / "forge.toml"
    path.write_text(done.stdout)
    assert load_config(path).config == load_config(tmp_path / "absent.toml").config
    assert "[[projects]]" in done.stdout


def test_supervise_refuses_a_config_that_does_not_load(
    tmp_path: Path, forge_dirs: dict[str, Path]
) -> None:
    """Issue 2, item 2: refused at start with the loader's message naming line and key, exit 2."""
    path = tmp_path / "forge.toml"
    path.write_text('[[projects]]\norg = "acme"\nname = "forge"\npath = "/srv"\nshel = "sh"\n')
    done = forge("supervise", "--config", str(path))
    assert done.returncode == 2
    assert done.stderr == (
        f"forge: {path} line 5: projects[0].shel: unknown key; [projects] has browser_profile, "
        "document_roots, name, org, path, shell\n"
    )


def test_supervise_refuses_a_bad_port_flag(forge_dirs: dict[str, Path]) -> None:
    done = forge("supervise", "--port", "70000")
    assert done.returncode == 2
    assert done.stderr.endswith(
        "forge.toml: server.port (from the command line): "
        "expected an integer from 1 to 65535, got 70000\n"
    )
