"""A missing forge.toml is the embedded defaults; a file's values reach the typed view."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from forge.config import (
    CONFIG_ENV,
    ConfigError,
    greeting_settings,
    load_config,
    resolve_config_path,
)
from forge.paths import config_file


def test_a_missing_file_is_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "absent" / "forge.toml"
    loaded = load_config(path)
    config = loaded.config
    assert (config.server.bind, config.server.port) == ("127.0.0.1", 8790)
    assert config.server.allowed_origins == ()
    assert config.projects == ()
    assert config.orgs == ()
    assert config.browser.chromium_path == Path("/usr/bin/chromium")
    assert config.browser.home_url == "about:blank"
    assert config.browser.idle_close_s == 600
    assert config.documents.max_size_mib == 10
    assert config.log.level == "info"
    assert (config.log.max_size_mib, config.log.backups) == (10, 5)
    assert config.terminal.shell is None
    assert loaded.source == path
    assert loaded.raw == b""
    assert loaded.fingerprint == hashlib.sha256(b"").hexdigest()[:16]
    assert loaded.document["source"] == str(path)


def test_the_socket_durations_default_to_the_production_values(tmp_path: Path) -> None:
    """O-T7: tests scale these down through forge.toml; the shipped values are 15/60/60/240 s."""
    server = load_config(tmp_path / "forge.toml").config.server
    assert (server.ping_interval_s, server.ping_timeout_s) == (15.0, 60.0)
    assert (server.write_timeout_s, server.watchdog_s) == (60.0, 240.0)


def test_an_empty_file_loads_like_a_missing_one(
    write_config: Callable[[str], Path], tmp_path: Path
) -> None:
    empty = load_config(write_config(""))
    missing = load_config(tmp_path / "other.toml")
    assert empty.config == missing.config
    assert empty.fingerprint == missing.fingerprint


def test_scaled_durations_and_fractions_load(write_config: Callable[[str], Path]) -> None:
    path = write_config(
        "[server]\nport = 9001\nping_interval_s = 0.15\nping_timeout_s = 0.6\n"
        "write_timeout_s = 0.5\nwatchdog_s = 2\n"
    )
    server = load_config(path).config.server
    assert server.port == 9001
    assert (server.ping_interval_s, server.ping_timeout_s) == (0.15, 0.6)
    assert (server.write_timeout_s, server.watchdog_s) == (0.5, 2.0)
    assert isinstance(server.watchdog_s, float)


def test_greeting_settings_without_a_client_table_are_the_built_ins(tmp_path: Path) -> None:
    settings = greeting_settings(load_config(tmp_path / "forge.toml").config)
    assert settings == {
        "mark": None,
        "theme": None,
        "font": None,
        "dictate": {"styling": "semi_formal", "structure": "prose", "context": "general"},
    }


def test_greeting_settings_carry_client_keys_and_dictate_axes(
    write_config: Callable[[str], Path],
) -> None:
    path = write_config(
        '[client]\nmark = "F"\ntheme = "dusk"\n\n'
        '[dictate]\nstyling = "casual"\ncontext = "code review"\n\n'
        "[browser]\nidle_close_s = 30\n"
    )
    settings = greeting_settings(load_config(path).config)
    assert settings == {
        "mark": "F",
        "theme": "dusk",
        "font": None,
        "dictate": {"styling": "casual", "structure": "prose", "context": "code review"},
    }


def test_projects_and_orgs_load_in_file_order(
    write_config: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = write_config(
        '[orgs.acme]\nbrowser_profile = "acme-work"\n\n'
        '[[projects]]\norg = "acme"\nname = "forge"\npath = "~/src/forge"\n'
        'document_roots = ["docs", "/srv/specs"]\n\n'
        '[[projects]]\norg = "acme"\nname = "site"\npath = "site"\nshell = "/bin/zsh"\n'
        'browser_profile = "site"\n\n'
        '[[projects]]\norg = "solo"\nname = "notes"\npath = "/notes"\n\n'
        '[terminal]\nshell = "/bin/bash"\n'
    )
    config = load_config(path).config
    forge, site, notes = config.projects
    assert (forge.org, forge.name) == ("acme", "forge")
    assert forge.path == tmp_path / "home" / "src" / "forge"
    assert forge.document_roots == (tmp_path / "docs", Path("/srv/specs"))
    assert site.path == tmp_path / "site"
    assert config.project("acme", "site") is site
    assert config.project("acme", "nope") is None
    assert config.browser_profile_for(forge) == "acme-work"
    assert config.browser_profile_for(site) == "site"
    assert config.browser_profile_for(notes) == "default"
    assert config.shell_for(site, {"SHELL": "/bin/fish"}) == "/bin/zsh"
    assert config.shell_for(forge, {"SHELL": "/bin/fish"}) == "/bin/bash"


def test_shell_falls_back_to_the_environment_then_sh(write_config: Callable[[str], Path]) -> None:
    path = write_config('[[projects]]\norg = "o"\nname = "p"\npath = "/p"\n')
    config = load_config(path).config
    (project,) = config.projects
    assert config.shell_for(project, {"SHELL": "/bin/fish"}) == "/bin/fish"
    assert config.shell_for(project, {}) == "/bin/sh"


def test_command_line_overrides_win_and_reach_the_document(
    write_config: Callable[[str], Path],
) -> None:
    path = write_config('[server]\nbind = "0.0.0.0"\nport = 9000\n')
    loaded = load_config(path, overrides={"server.port": 9100})
    assert (loaded.config.server.bind, loaded.config.server.port) == ("0.0.0.0", 9100)
    rows = {row["path"]: row for area in loaded.document["areas"] for row in area["keys"]}
    assert rows["server.port"]["value"] == 9100
    assert loaded.overrides == {"server.port": 9100}


def test_a_bad_override_is_refused_naming_the_command_line(
    write_config: Callable[[str], Path],
) -> None:
    path = write_config("")
    with pytest.raises(ConfigError) as refused:
        load_config(path, overrides={"server.port": 0})
    assert str(refused.value) == (
        f"{path}: server.port (from the command line): expected an integer from 1 to 65535, got 0"
    )
    assert refused.value.key == "server.port"
    assert refused.value.line is None


def test_a_bad_file_value_is_the_file_fault_even_when_overridden(
    write_config: Callable[[str], Path],
) -> None:
    path = write_config('[server]\nport = "x"\n')
    with pytest.raises(ConfigError) as refused:
        load_config(path, overrides={"server.port": 9000})
    assert str(refused.value) == (
        f'{path} line 2: server.port: expected an integer from 1 to 65535, got "x"'
    )


def test_resolve_prefers_the_flag_then_the_environment_then_xdg(
    forge_dirs: dict[str, Path],
) -> None:
    environ = {CONFIG_ENV: "/from/env.toml"}
    assert resolve_config_path("/from/flag.toml", environ) == Path("/from/flag.toml")
    assert resolve_config_path(None, environ) == Path("/from/env.toml")
    assert resolve_config_path(None, {}) == forge_dirs["config"] / "forge" / "forge.toml"
    assert resolve_config_path(None, {CONFIG_ENV: ""}) == config_file()


def test_a_relative_path_resolves_against_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_config_path("conf/forge.toml", {}) == tmp_path / "conf" / "forge.toml"
    assert resolve_config_path(None, {CONFIG_ENV: "f.toml"}) == tmp_path / "f.toml"


def test_only_plain_table_keys_can_be_overridden(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="projects"):
        load_config(tmp_path / "forge.toml", overrides={"projects[].path": "/x"})
