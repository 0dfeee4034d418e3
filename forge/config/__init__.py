"""forge.toml: embedded defaults, the key catalogue, loading, the settings document and reloads.

The public surface other areas import; see docs/architecture/config.md.
"""

from __future__ import annotations

from forge.config.address import page_url, record_listening, recorded_url, socket_url
from forge.config.catalogue import AREAS, KEYS, Area, Key, ReloadClass, key_for
from forge.config.greeting import greeting_settings
from forge.config.loader import (
    CONFIG_ENV,
    ConfigError,
    LoadedConfig,
    load_config,
    parse_config,
    require_config_path,
    resolve_config_path,
)
from forge.config.model import (
    BrowserConfig,
    ClientConfig,
    DictateConfig,
    DocumentsConfig,
    ForgeConfig,
    LabConfig,
    LogConfig,
    OrgConfig,
    ProjectConfig,
    ServerConfig,
    TerminalConfig,
    TtsConfig,
)
from forge.config.stamp import BuildStamp, build_stamp
from forge.config.watcher import ConfigWatcher, watch_config

__all__ = [
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
]
