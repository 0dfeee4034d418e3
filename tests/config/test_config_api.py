"""The surface other areas import from forge.config is pinned, so it cannot change silently."""

from __future__ import annotations

import inspect

import forge.config
from forge.clock import SYSTEM_CLOCK
from forge.config import ConfigError, ConfigWatcher, load_config, resolve_config_path, watch_config
from forge.errors import UserError

PUBLIC = {
    "AREAS",
    "CONFIG_ENV",
    "KEYS",
    "Area",
    "BrowserConfig",
    "BuildStamp",
    "ClientConfig",
    "ConfigError",
    "ConfigWatcher",
    "DictateConfig",
    "DocumentsConfig",
    "ForgeConfig",
    "Key",
    "LabConfig",
    "LoadedConfig",
    "LogConfig",
    "OrgConfig",
    "ProjectConfig",
    "ReloadClass",
    "ServerConfig",
    "TerminalConfig",
    "TtsConfig",
    "build_stamp",
    "greeting_settings",
    "key_for",
    "load_config",
    "page_url",
    "parse_config",
    "record_listening",
    "recorded_url",
    "require_config_path",
    "resolve_config_path",
    "socket_url",
    "watch_config",
}


def test_the_public_names_are_pinned() -> None:
    assert set(forge.config.__all__) == PUBLIC
    assert all(hasattr(forge.config, name) for name in PUBLIC)


def test_the_signatures_are_pinned() -> None:
    assert str(inspect.signature(load_config)) == (
        "(path: 'Path', *, overrides: 'Mapping[str, TomlValue] | None' = None) -> 'LoadedConfig'"
    )
    assert str(inspect.signature(resolve_config_path)) == (
        "(cli_path: 'str | Path | None', environ: 'Mapping[str, str]') -> 'Path'"
    )
    watch = inspect.signature(watch_config).parameters
    assert list(watch) == ["path", "current", "on_change", "clock", "interval_s"]
    assert watch["clock"].default is SYSTEM_CLOCK
    assert watch["interval_s"].default == 1.0
    assert list(inspect.signature(ConfigWatcher).parameters) == ["path", "current", "on_change"]


def test_a_config_error_is_a_user_error_with_where_and_which() -> None:
    assert issubclass(ConfigError, UserError)
    assert ConfigError.exit_code == 2
    assert list(inspect.signature(ConfigError).parameters) == ["reason", "path", "line", "key"]
