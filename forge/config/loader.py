"""Loading forge.toml: read, parse with tomllib, validate against the catalogue, build the views.

A missing file is the embedded defaults (the catalogue's), so `forge supervise` runs out of the box.
Anything else that does not load raises `ConfigError` naming the file, the line and the key, and the
supervisor refuses to start (exit code 2) or, on a reload, keeps the config it has.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge import paths
from forge.config.catalogue import AREAS, NAME, Area, Key, TomlValue, key_for, keys_of
from forge.config.document import Document, build_document
from forge.config.locate import (
    KeyPath,
    key_on_line,
    line_of,
    statement_start,
    syntax_error_line,
)
from forge.config.model import (
    AgentConfig,
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
from forge.config.stamp import build_stamp
from forge.errors import UserError
from forge.wire.origin import is_loopback_host

CONFIG_ENV = "FORGE_CONFIG"
"""Environment variable naming the forge.toml to read when --config does not."""


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
"""A TOML bare key; any other name is shown quoted."""


class ConfigError(UserError):
    """forge.toml (or a command-line override) does not load; the message says where and why:
    `<path> line <n>: <reason>`, or `<path>: <reason>` when no line is known."""

    def __init__(self, reason: str, *, path: Path, line: int | None, key: str | None) -> None:
        where = f"{path} line {line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")
        self.reason = reason
        """What is wrong, without where: for text that is not the file (an unsaved edit)."""
        self.path = path
        self.line = line
        self.key = key


@dataclass(frozen=True, eq=False)
class LoadedConfig:
    """One load of forge.toml: the typed config plus what the settings frame and reload need."""

    config: ForgeConfig
    source: Path
    """The file that was read, or would have been read when it is missing."""
    raw: bytes
    fingerprint: str
    """First 16 hex digits of SHA-256 over `raw` (O-G3); a missing file hashes as empty."""
    document: Document
    """The settings document, built once for this load and shared by every connection."""
    overrides: Mapping[str, TomlValue] = field(default_factory=dict)
    """Command-line values (by pattern) laid over the file, re-applied on every reload."""


def resolve_config_path(cli_path: str | Path | None, environ: Mapping[str, str]) -> Path:
    """--config, else $FORGE_CONFIG, else the XDG default; absolute, as the document shows it."""
    chosen = cli_path or environ.get(CONFIG_ENV) or paths.config_file()
    return Path(chosen).expanduser().absolute()


def require_config_path(cli_path: str | Path | None, environ: Mapping[str, str]) -> Path:
    """`resolve_config_path` for a command line: a `--config` that names no file is refused. Only
    a forge.toml nobody named may be missing (the defaults); a typo must not run on them."""
    path = resolve_config_path(cli_path, environ)
    if cli_path and not path.exists():
        raise ConfigError(
            "no such file; --config must name a forge.toml that exists "
            "(without --config, a missing forge.toml means the defaults)",
            path=path,
            line=None,
            key=None,
        )
    return path


def fingerprint_of(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:16]


def read_raw(path: Path) -> bytes:
    """The file's bytes; empty for a missing file, ConfigError for one that cannot be read."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""
    except OSError as error:
        reason = error.strerror or str(error)
        raise ConfigError(f"cannot read: {reason}", path=path, line=None, key=None) from None


def load_config(path: Path, *, overrides: Mapping[str, TomlValue] | None = None) -> LoadedConfig:
    """Read and load `path`; overrides (pattern -> value, e.g. {"server.port": 9000}) win."""
    return parse_config(read_raw(path), path, overrides=overrides)


def parse_config(
    raw: bytes, source: Path, *, overrides: Mapping[str, TomlValue] | None = None
) -> LoadedConfig:
    """Load from bytes already read: pure apart from the build stamp, which is cached."""
    overrides = dict(overrides or {})
    text = _decode(raw, source)
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        line = statement_start(text, syntax_error_line(text, str(error)))
        key = key_on_line(text, line)
        reason = (f"{key}: " if key else "") + str(error)
        raise ConfigError(reason, path=source, line=line, key=key) from None
    try:
        resolved = _resolve(data)
        _apply_overrides(resolved, overrides)
        _check_access(resolved["server"], overrides)
    except _Invalid as invalid:
        raise _located(invalid, text, source) from None
    fingerprint = fingerprint_of(raw)
    document = build_document(
        resolved, version=build_stamp().short, source=str(source), fingerprint=fingerprint
    )
    return LoadedConfig(
        config=_typed(resolved, source.parent),
        source=source,
        raw=raw,
        fingerprint=fingerprint,
        document=document,
        overrides=overrides,
    )


class _Invalid(Exception):
    """A validation failure at a key path, before its line is looked up."""

    def __init__(
        self,
        path: KeyPath,
        why: str,
        *,
        line_at: KeyPath | None = None,
        from_command_line: bool = False,
    ) -> None:
        super().__init__(why)
        self.path = path
        self.why = why
        self.line_at = path if line_at is None else line_at
        """Where to look for the line: a missing key is reported on its entry's header."""
        self.from_command_line = from_command_line


def _decode(raw: bytes, source: Path) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        reason = f"not UTF-8 text (byte {error.start})"
        raise ConfigError(reason, path=source, line=line, key=None) from None


def _located(invalid: _Invalid, text: str, source: Path) -> ConfigError:
    key = _display(invalid.path)
    if invalid.from_command_line:
        return ConfigError(
            f"{key} (from the command line): {invalid.why}",
            path=source,
            line=None,
            key=key,
        )
    line = line_of(text, invalid.line_at)
    return ConfigError(f"{key}: {invalid.why}", path=source, line=line, key=key)


def _display(path: KeyPath) -> str:
    """`projects[1].path`, `orgs."acme.io".browser_profile`: the key as a person finds it."""
    shown = ""
    for part in path:
        if isinstance(part, int):
            shown += f"[{part}]"
        else:
            name = part if _BARE_KEY.fullmatch(part) else json.dumps(part, ensure_ascii=False)
            shown += f".{name}" if shown else name
    return shown


def _render(value: object) -> str:
    shown = json.dumps(value, default=str, ensure_ascii=False)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _resolve(data: Mapping[str, Any]) -> dict[str, Any]:
    """Validate the parsed file and fill defaults: the tree the document and the typed view read."""
    known = {area.id for area in AREAS}
    for name in data:
        if name not in known:
            raise _Invalid((name,), f"unknown key; forge.toml has {_listing(known)}")
    resolved: dict[str, Any] = {}
    for area in AREAS:
        section = data.get(area.id)
        if area.form == "table":
            resolved[area.id] = _entry(area, (area.id,), section if section is not None else {})
        elif area.form == "array":
            resolved[area.id] = _array(area, section if section is not None else [])
        else:
            resolved[area.id] = _named(area, section if section is not None else {})
    return resolved


def _entry(area: Area, at: KeyPath, section: object) -> dict[str, TomlValue]:
    if not isinstance(section, dict):
        raise _Invalid(at, f"expected a table, got {_render(section)}")
    keys = keys_of(area)
    leaves = {key.leaf for key in keys}
    for leaf in section:
        if leaf not in leaves:
            raise _Invalid((*at, leaf), f"unknown key; [{area.id}] has {_listing(leaves)}")
    return {key.leaf: _value(key, (*at, key.leaf), section, at) for key in keys}


def _value(key: Key, at: KeyPath, section: Mapping[str, Any], entry: KeyPath) -> TomlValue:
    if key.leaf not in section:
        if key.required and key.default is None:
            raise _Invalid(at, "missing; every entry needs it", line_at=entry)
        return copy.deepcopy(key.default)
    value: TomlValue = section[key.leaf]
    if not key.rule.accepts(value):
        raise _Invalid(at, f"expected {key.rule.expected}, got {_render(value)}")
    return value


def _array(area: Area, section: object) -> list[dict[str, TomlValue]]:
    if not isinstance(section, list):
        raise _Invalid((area.id,), f"expected [[{area.id}]] entries, got {_render(section)}")
    entries = [_entry(area, (area.id, index), item) for index, item in enumerate(section)]
    seen: set[tuple[TomlValue, ...]] = set()
    for index, entry in enumerate(entries):
        names = tuple(entry[name] for name in area.name_keys)
        if names in seen:
            shown = "/".join(str(name) for name in names)
            raise _Invalid((area.id, index, area.name_keys[-1]), f"{shown} is configured twice")
        seen.add(names)
    return entries


def _named(area: Area, section: object) -> dict[str, dict[str, TomlValue]]:
    if not isinstance(section, dict):
        raise _Invalid((area.id,), f"expected [{area.id}.<name>] tables, got {_render(section)}")
    entries = {}
    for name, entry in section.items():
        if not NAME.accepts(name):
            raise _Invalid((area.id, name), f"expected {NAME.expected}")
        entries[name] = _entry(area, (area.id, name), entry)
    return entries


def _apply_overrides(resolved: dict[str, Any], overrides: Mapping[str, TomlValue]) -> None:
    """Lay command-line values over plain-table keys, checked by the same rules as the file's."""
    for pattern, value in overrides.items():
        key = key_for(pattern)
        if key.area.form != "table":
            raise ValueError(f"{pattern} is a repeated key; only plain-table keys are overridden")
        if not key.rule.accepts(value):
            raise _Invalid(
                (key.area.id, key.leaf),
                f"expected {key.rule.expected}, got {_render(value)}",
                from_command_line=True,
            )
        resolved[key.area.id][key.leaf] = value


def _check_access(server: Mapping[str, Any], overrides: Mapping[str, TomlValue]) -> None:
    """The rules between keys of [server]: no token only on loopback; TLS needs both files."""
    if server["auth"] == "none" and not is_loopback_host(server["bind"]):
        raise _Invalid(
            ("server", "auth"),
            f'"none" is allowed only with a loopback bind, and server.bind is '
            f"{_render(server['bind'])}: anyone who reaches the port would get a shell",
            from_command_line="server.auth" in overrides,
        )
    for have, lack in (("tls_cert", "tls_key"), ("tls_key", "tls_cert")):
        if server[have] is not None and server[lack] is None:
            raise _Invalid(
                ("server", have),
                f"set together with server.{lack} (a certificate needs its key and back)",
                from_command_line=f"server.{have}" in overrides,
            )


def _listing(names: set[str]) -> str:
    return ", ".join(sorted(names))


def _typed(resolved: Mapping[str, Any], base: Path) -> ForgeConfig:
    server, client, dictate = resolved["server"], resolved["client"], resolved["dictate"]
    terminal, browser = resolved["terminal"], resolved["browser"]
    return ForgeConfig(
        server=ServerConfig(
            bind=server["bind"],
            port=server["port"],
            allowed_origins=tuple(server["allowed_origins"]),
            auth=server["auth"],
            tls_cert=None if server["tls_cert"] is None else _path(server["tls_cert"], base),
            tls_key=None if server["tls_key"] is None else _path(server["tls_key"], base),
            ping_interval_s=float(server["ping_interval_s"]),
            ping_timeout_s=float(server["ping_timeout_s"]),
            write_timeout_s=float(server["write_timeout_s"]),
            watchdog_s=float(server["watchdog_s"]),
        ),
        client=ClientConfig(mark=client["mark"], theme=client["theme"], font=client["font"]),
        dictate=DictateConfig(
            enabled=dictate["enabled"],
            styling=dictate["styling"],
            structure=dictate["structure"],
            context=dictate["context"],
            models_dir=_path(dictate["models_dir"], base) if dictate["models_dir"] else None,
        ),
        projects=tuple(
            ProjectConfig(
                org=entry["org"],
                name=entry["name"],
                path=_path(entry["path"], base),
                shell=entry["shell"],
                browser_profile=entry["browser_profile"],
                document_roots=tuple(_path(root, base) for root in entry["document_roots"]),
            )
            for entry in resolved["projects"]
        ),
        orgs=tuple(
            OrgConfig(name=name, browser_profile=entry["browser_profile"])
            for name, entry in resolved["orgs"].items()
        ),
        terminal=TerminalConfig(shell=terminal["shell"]),
        browser=BrowserConfig(
            chromium_path=_path(browser["chromium_path"], base),
            idle_close_s=float(browser["idle_close_s"]),
            home_url=browser["home_url"],
            audio=bool(browser["audio"]),
        ),
        documents=DocumentsConfig(max_size_mib=resolved["documents"]["max_size_mib"]),
        log=LogConfig(
            level=resolved["log"]["level"],
            max_size_mib=resolved["log"]["max_size_mib"],
            backups=resolved["log"]["backups"],
            loop_stall_ms=resolved["log"]["loop_stall_ms"],
        ),
        lab=LabConfig(
            dask_no_worker_s=float(resolved["lab"]["dask_no_worker_s"]),
            limit_pids=resolved["lab"]["limit_pids"],
            limit_memory_mib=resolved["lab"]["limit_memory_mib"],
            limit_disk_mib=resolved["lab"]["limit_disk_mib"],
            limit_open_files=resolved["lab"]["limit_open_files"],
        ),
        tts=TtsConfig(
            enabled=resolved["tts"]["enabled"],
            engine=resolved["tts"]["engine"],
            voice=resolved["tts"]["voice"],
            piper_model=_path(resolved["tts"]["piper_model"], base)
            if resolved["tts"]["piper_model"]
            else None,
        ),
        agent=AgentConfig(
            cli_path=_path(resolved["agent"]["cli_path"], base)
            if resolved["agent"]["cli_path"]
            else None
        ),
    )


def _path(value: str, base: Path) -> Path:
    """`~` expands; a relative path is read from forge.toml's own folder, not the working dir."""
    expanded = Path(os.path.expanduser(value))
    return expanded if expanded.is_absolute() else (base / expanded).absolute()
