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


def test_a_reader_that_goes_away_ends_the_output_quietly(tmp_path: Path) -> None:
    """Issue 13 item 13: `forge config show | head` whose reader has gone exits as Unix tools do
    on SIGPIPE (128 + 13), with nothing on stderr: no BrokenPipeError traceback."""
    path = tmp_path / "forge.toml"
    path.write_text('[[projects]]\norg = "acme"\nname = "forge"\npath = "/srv/forge"\n')
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte is written
    try:
        done = subprocess.run(
            [str(FORGE), "config", "show", "--config", str(path)],
            stdout=write, stderr=subprocess.PIPE, text=True, timeout=60, check=False,
        )  # fmt: skip
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")


def test_an_explicit_config_that_does_not_exist_is_refused(
    tmp_path: Path, forge_dirs: dict[str, Path]
) -> None:
    """Issue 13 item 14: a path named with --config must exist (exit 2 and a sentence), for
    every verb that reads forge.toml; only an unnamed forge.toml may be missing (the defaults)."""
    missing = tmp_path / "typo.toml"
    for verb in (("config", "check"), ("config", "show"), ("supervise",), ("status",)):
        done = forge(*verb, "--config", str(missing))
        assert (done.returncode, done.stdout) == (2, ""), verb
        assert done.stderr == (
            f"forge: {missing}: no such file; --config must name a forge.toml that exists "
            "(without --config, a missing forge.toml means the defaults)\n"
        )
    assert not missing.exists()


def test_check_warns_of_a_secret_or_log_others_can_read(forge_dirs: dict[str, Path]) -> None:
    state = forge_dirs["state"] / "forge"
    (state / "tls").mkdir(mode=0o700, parents=True)
    state.chmod(0o755)  # as forge made it before its folders were private
    key = forge_dirs["config"] / "server.key"
    modes = {
        state / "token": 0o644,
        state / "forge.log": 0o644,
        state / "forge.log.1": 0o640,
        state / "tls" / "self-signed.key": 0o600,
        key: 0o604,
    }
    for path, mode in modes.items():
        path.write_text("secret\n")
        path.chmod(mode)
    config = forge_dirs["config"] / "forge.toml"
    config.write_text(f'[server]\ntls_cert = "{key}"\ntls_key = "{key}"\n')
    done = forge("config", "check", "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"warning: {state} is open to every user of this machine (mode 0755): chmod 700 {state}",
        f"warning: {state}/token is open to every user of this machine (mode 0644): "
        f"chmod 600 {state}/token",
        f"warning: {key} is open to every user of this machine (mode 0604): chmod 600 {key}",
        f"warning: {state}/forge.log is open to every user of this machine (mode 0644): "
        f"chmod 600 {state}/forge.log",
        f"warning: {state}/forge.log.1 is open to its group (mode 0640): "
        f"chmod 600 {state}/forge.log.1",
    ]
    for path in (state, *modes):
        path.chmod(0o700 if path.is_dir() else 0o600)
    assert forge("config", "check", "--config", str(config)).stderr == ""
