"""The key catalogue: the one source of every forge.toml key's shape, default, class and edit.

The loader validates against it, the settings document is built from it and the reload summary reads
its classes (acceptance G10, O-G8); nothing else lists keys. A key is named by its pattern:
`server.port` for a plain table, `projects[].path` for a key every repeated entry has.

Areas come in three forms:
- `table`: one TOML table (`[server]`).
- `array`: an array of tables (`[[projects]]`), each entry named by its own keys (org, name).
- `named`: a table of tables keyed by instance name (`[orgs.acme]`), the name being the TOML key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Protocol

from forge.logs import LEVELS

Kind = Literal["string", "number", "bool", "list", "table", "set"]
"""A value's shape for drawing, as the settings document names it."""

ReloadClass = Literal["live", "next_session", "restart", "not_read_yet"]
"""When a changed value takes effect: on its next use, when a session or connection opens, at the
next start, or never yet (the loader accepts the key and nothing consumes it). A key's class states
what the code does today: the change that starts reading a key sets its class here."""

EditKind = Literal["string", "number", "bool", "enum", "list"]
EditGroup = Literal["account", "project", "slack", "model", "org"]
AreaForm = Literal["table", "array", "named"]

TomlValue = str | int | float | bool | list["TomlValue"] | dict[str, "TomlValue"] | None
"""A value as TOML loads it; None stands for an unset optional key."""


class Rule(Protocol):
    """What a key's value must be; `expected` completes "expected ..." in an error."""

    @property
    def expected(self) -> str: ...

    def accepts(self, value: TomlValue) -> bool: ...


@dataclass(frozen=True)
class Text:
    """A non-empty string, optionally matching `pattern` (described by `what`)."""

    pattern: str | None = None
    what: str = "a non-empty string"

    @property
    def expected(self) -> str:
        return self.what

    def accepts(self, value: TomlValue) -> bool:
        if not isinstance(value, str) or not value:
            return False
        return self.pattern is None or re.fullmatch(self.pattern, value) is not None


@dataclass(frozen=True)
class Integer:
    """A whole number within [low, high] (TOML booleans are not numbers here)."""

    low: int
    high: int

    @property
    def expected(self) -> str:
        return f"an integer from {self.low} to {self.high}"

    def accepts(self, value: TomlValue) -> bool:
        return (
            isinstance(value, int)
            and not isinstance(value, bool)
            and self.low <= value <= self.high
        )


@dataclass(frozen=True)
class Seconds:
    """A positive duration in seconds, whole or fractional (tests scale the socket's down)."""

    @property
    def expected(self) -> str:
        return "a number of seconds above 0"

    def accepts(self, value: TomlValue) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


@dataclass(frozen=True)
class Flag:
    @property
    def expected(self) -> str:
        return "true or false"

    def accepts(self, value: TomlValue) -> bool:
        return isinstance(value, bool)


@dataclass(frozen=True)
class Choice:
    """One of a fixed set of names; the document offers them as an enum's `allowed`."""

    names: tuple[str, ...]

    @property
    def expected(self) -> str:
        return "one of " + ", ".join(f'"{name}"' for name in self.names)

    def accepts(self, value: TomlValue) -> bool:
        return isinstance(value, str) and value in self.names


@dataclass(frozen=True)
class Texts:
    """A list of non-empty strings."""

    @property
    def expected(self) -> str:
        return "a list of non-empty strings"

    def accepts(self, value: TomlValue) -> bool:
        return isinstance(value, list) and all(isinstance(item, str) and item for item in value)


@dataclass(frozen=True)
class Area:
    """A top-level table of forge.toml, drawn as one section of the settings page."""

    id: str
    note: str
    form: AreaForm = "table"
    edit_group: EditGroup | None = None
    """The repeated entry a key of this area belongs to; None for a plain table's own keys."""
    name_keys: tuple[str, ...] = ()
    """For an `array` area: the keys whose values name an entry (and must be unique together)."""

    @property
    def name(self) -> str:
        return self.id


@dataclass(frozen=True)
class Key:
    """One key of the catalogue."""

    area: Area
    leaf: str
    kind: Kind
    reload: ReloadClass
    rule: Rule
    default: TomlValue
    note: str
    required: bool = False
    """The key may not be unset: it must be in the file (no default) or keeps its default."""

    @property
    def pattern(self) -> str:
        if self.area.form == "table":
            return f"{self.area.id}.{self.leaf}"
        return f"{self.area.id}[].{self.leaf}"

    @property
    def allowed(self) -> tuple[str, ...] | None:
        return self.rule.names if isinstance(self.rule, Choice) else None


NAME = Text(r"[^/\s](?:[^/]*[^/\s])?", "a name without '/' or surrounding spaces")
PROFILE = Text(r"[A-Za-z0-9][A-Za-z0-9._-]*", "a profile name of letters, digits, '.', '_' or '-'")

SERVER = Area(
    "server", "the socket a client reads through: where it listens and how it keeps peers"
)
CLIENT = Area("client", "a client's own look, carried in the greeting; unset means the built-in")
DICTATE = Area("dictate", "the dictation prompt axes a client starts from: a default, not a state")
TTS = Area("tts", "the speech a seat sends to clients with voice on, rendered on this machine")
PROJECTS = Area(
    "projects",
    "the projects seats open in: [[projects]] entries named org/name",
    form="array",
    edit_group="project",
    name_keys=("org", "name"),
)
ORGS = Area("orgs", "per-org defaults: [orgs.<name>] tables", form="named", edit_group="org")
TERMINAL = Area("terminal", "the shell a terminal starts when its project names none")
BROWSER = Area("browser", "the Chromium the server hosts, one process per profile")
DOCUMENTS = Area("documents", "what a client may read as a document")
LOG = Area("log", "the supervisor's JSON-lines log")
LAB = Area("lab", "how `forge evaluate` runs a cohort's attempts")
AGENT = Area("agent", "the coding agent (Claude Code) an agent seat runs")

AREAS: tuple[Area, ...] = (
    SERVER,
    CLIENT,
    DICTATE,
    TTS,
    PROJECTS,
    ORGS,
    TERMINAL,
    BROWSER,
    DOCUMENTS,
    LOG,
    LAB,
    AGENT,
)

KEYS: tuple[Key, ...] = (
    Key(
        SERVER,
        "bind",
        kind="string",
        reload="restart",
        rule=Text(),
        default="127.0.0.1",
        required=True,
        note="the address to listen on; loopback by default (a phone needs a LAN or tailnet one)",
    ),
    Key(
        SERVER,
        "port",
        kind="number",
        reload="restart",
        rule=Integer(1, 65535),
        default=8790,
        required=True,
        note="the TCP port of /socket",
    ),
    Key(
        SERVER,
        "allowed_origins",
        kind="set",
        reload="live",
        rule=Texts(),
        default=[],
        note="extra page origins allowed to connect, matched exactly at each handshake",
    ),
    Key(
        SERVER,
        "auth",
        kind="string",
        reload="restart",
        rule=Choice(("token", "none")),
        default="token",
        required=True,
        note='every connection shows forge\'s token; "none" is allowed only on a loopback bind',
    ),
    Key(
        SERVER,
        "tls_cert",
        kind="string",
        reload="restart",
        rule=Text(),
        default=None,
        note="PEM certificate chain: serve https:// and wss://; the file is re-read when it "
        "changes; relative to forge.toml's folder",
    ),
    Key(
        SERVER,
        "tls_key",
        kind="string",
        reload="restart",
        rule=Text(),
        default=None,
        note="PEM private key of tls_cert; re-read when it changes",
    ),
    Key(
        SERVER,
        "ping_interval_s",
        kind="number",
        reload="restart",
        rule=Seconds(),
        default=15,
        required=True,
        note="seconds between the server's keepalive pings",
    ),
    Key(
        SERVER,
        "ping_timeout_s",
        kind="number",
        reload="restart",
        rule=Seconds(),
        default=60,
        required=True,
        note="seconds an unanswered ping waits before the connection is closed",
    ),
    Key(
        SERVER,
        "write_timeout_s",
        kind="number",
        reload="next_session",
        rule=Seconds(),
        default=60,
        required=True,
        note="the bound on one frame write; past it the connection is aborted",
    ),
    Key(
        SERVER,
        "watchdog_s",
        kind="number",
        reload="next_session",
        rule=Seconds(),
        default=240,
        required=True,
        note="a connection with no completed write for this long is ended",
    ),
    Key(
        CLIENT,
        "mark",
        kind="string",
        reload="live",
        rule=Text(),
        default=None,
        note="the client's mark; unset is the built-in",
    ),
    Key(
        CLIENT,
        "theme",
        kind="string",
        reload="live",
        rule=Text(),
        default=None,
        note="the client's theme; unset is the built-in",
    ),
    Key(
        CLIENT,
        "font",
        kind="string",
        reload="live",
        rule=Text(),
        default=None,
        note="the client's font; unset is the built-in",
    ),
    Key(
        DICTATE,
        "enabled",
        kind="bool",
        reload="live",
        rule=Flag(),
        default=False,
        required=True,
        note="whether dictation is offered",
    ),
    Key(
        DICTATE,
        "styling",
        kind="string",
        reload="next_session",
        rule=Text(),
        default="semi_formal",
        required=True,
        note="the styling axis a client starts from",
    ),
    Key(
        DICTATE,
        "structure",
        kind="string",
        reload="next_session",
        rule=Text(),
        default="prose",
        required=True,
        note="the structure axis a client starts from",
    ),
    Key(
        DICTATE,
        "context",
        kind="string",
        reload="next_session",
        rule=Text(),
        default="general",
        required=True,
        note="the context axis a client starts from",
    ),
    Key(
        DICTATE,
        "models_dir",
        kind="string",
        reload="restart",
        rule=Text(),
        default=None,
        note="where dictation models are looked for; unset is the packaged tiny.en only",
    ),
    Key(
        TTS,
        "enabled",
        kind="bool",
        reload="restart",
        rule=Flag(),
        default=False,
        required=True,
        note="whether a seat's speech is rendered for clients with voice on",
    ),
    Key(
        TTS,
        "engine",
        kind="string",
        reload="restart",
        rule=Choice(("espeak-ng", "piper")),
        default="espeak-ng",
        required=True,
        note="the speaking engine; piper needs piper_model",
    ),
    Key(
        TTS,
        "voice",
        kind="string",
        reload="restart",
        rule=Text(),
        default=None,
        note="the espeak-ng voice id (en-us, en-gb...); unset is the engine's default",
    ),
    Key(
        TTS,
        "piper_model",
        kind="string",
        reload="restart",
        rule=Text(),
        default=None,
        note="the Piper .onnx voice (its .onnx.json beside it), for engine = piper",
    ),
    Key(
        PROJECTS,
        "org",
        kind="string",
        reload="live",
        rule=NAME,
        default=None,
        required=True,
        note="the organisation the project belongs to (first part of a seat name)",
    ),
    Key(
        PROJECTS,
        "name",
        kind="string",
        reload="live",
        rule=NAME,
        default=None,
        required=True,
        note="the project's name (second part of a seat name)",
    ),
    Key(
        PROJECTS,
        "path",
        kind="string",
        reload="next_session",
        rule=Text(),
        default=None,
        required=True,
        note="the project's working tree; ~ expands, relative to forge.toml's folder",
    ),
    Key(
        PROJECTS,
        "shell",
        kind="string",
        reload="next_session",
        rule=Text(),
        default=None,
        note="the shell its terminals start; unset is [terminal] shell",
    ),
    Key(
        PROJECTS,
        "browser_profile",
        kind="string",
        reload="live",
        rule=PROFILE,
        default=None,
        note="the browser profile its seats use; unset is the org's, else default",
    ),
    Key(
        PROJECTS,
        "document_roots",
        kind="list",
        reload="live",
        rule=Texts(),
        default=[],
        note="folders besides the working tree a client may read documents from",
    ),
    Key(
        ORGS,
        "browser_profile",
        kind="string",
        reload="live",
        rule=PROFILE,
        default=None,
        note="the browser profile of the org's projects that name none",
    ),
    Key(
        TERMINAL,
        "shell",
        kind="string",
        reload="next_session",
        rule=Text(),
        default=None,
        note="the shell a terminal starts; unset is $SHELL, else /bin/sh",
    ),
    Key(
        BROWSER,
        "chromium_path",
        kind="string",
        reload="next_session",
        rule=Text(),
        default="/usr/bin/chromium",
        required=True,
        note="the Chromium binary a profile's host launches",
    ),
    Key(
        BROWSER,
        "idle_close_s",
        kind="number",
        reload="next_session",
        rule=Seconds(),
        default=600,
        required=True,
        note="seconds without viewers or calls before a profile's host closes",
    ),
    Key(
        BROWSER,
        "home_url",
        kind="string",
        reload="next_session",
        rule=Text(),
        default="about:blank",
        required=True,
        note="the page a profile's boot tab opens",
    ),
    Key(
        BROWSER,
        "audio",
        kind="bool",
        reload="restart",
        rule=Flag(),
        default=True,
        required=True,
        note="whether a tab's sound reaches its viewers (needs PulseAudio)",
    ),
    Key(
        DOCUMENTS,
        "max_size_mib",
        kind="number",
        reload="live",
        rule=Integer(1, 1024),
        default=10,
        required=True,
        note="the largest document a client may read, in MiB",
    ),
    Key(
        LOG,
        "level",
        kind="string",
        reload="live",
        rule=Choice(tuple(LEVELS)),
        default="info",
        required=True,
        note="the lowest level written to the log (a running worker keeps the one it started with)",
    ),
    Key(
        LOG,
        "max_size_mib",
        kind="number",
        reload="restart",
        rule=Integer(1, 1024),
        default=10,
        required=True,
        note="forge.log is renamed forge.log.1 once it would pass this size in MiB (the older "
        "copies shift to .2, .3 ...), so a supervisor running for weeks keeps a bounded log",
    ),
    Key(
        LOG,
        "backups",
        kind="number",
        reload="restart",
        rule=Integer(1, 100),
        default=5,
        required=True,
        note="how many rotated copies (forge.log.1 to forge.log.N) are kept; an older one is "
        "deleted",
    ),
    Key(
        LOG,
        "loop_stall_ms",
        kind="number",
        reload="restart",
        rule=Integer(50, 60_000),
        default=1000,
        required=True,
        note="a turn of the supervisor's event loop this long is logged as loop_stalled, with "
        "what held it, and loop_resumed, with how long it stood",
    ),
    Key(
        LAB,
        "dask_no_worker_s",
        kind="number",
        reload="next_session",
        rule=Seconds(),
        default=60,
        required=True,
        note="seconds a --executor dask run waits while its scheduler has no worker; then it "
        "aborts (resumable), naming the scheduler and the waiting attempts; read as a run starts",
    ),
    Key(
        LAB,
        "limit_pids",
        kind="number",
        reload="next_session",
        rule=Integer(8, 4_194_304),
        default=1024,
        required=True,
        note="processes and threads one attempt may run at a time; a fork past it ends the "
        "attempt as resource-limit: pids (docs/lab.md, Limits); read as a run starts",
    ),
    Key(
        LAB,
        "limit_memory_mib",
        kind="number",
        reload="next_session",
        rule=Integer(64, 1_048_576),
        default=4096,
        required=True,
        note="memory one attempt may hold, in MiB, its private /tmp included; past it the "
        "attempt ends as resource-limit: memory; read as a run starts",
    ),
    Key(
        LAB,
        "limit_disk_mib",
        kind="number",
        reload="next_session",
        rule=Integer(16, 16_777_216),
        default=4096,
        required=True,
        note="disk one attempt may write, in MiB: its workspace and home's growth plus its "
        "private /tmp; also the largest file it may write; past it the attempt ends as "
        "resource-limit: disk; read as a run starts",
    ),
    Key(
        LAB,
        "limit_open_files",
        kind="number",
        reload="next_session",
        rule=Integer(64, 1_048_576),
        default=4096,
        required=True,
        note="files each process of an attempt may hold open; an open past it fails inside the "
        "recipe (EMFILE); read as a run starts",
    ),
    Key(
        AGENT,
        "cli_path",
        kind="string",
        reload="next_session",
        rule=Text(),
        default=None,
        note="a Claude Code CLI of your own (`claude`); unset is the one bundled in the agent "
        "SDK's wheel, else `claude` on PATH; read at each agent seat's spawn",
    ),
)

_BY_PATTERN = {key.pattern: key for key in KEYS}


def key_for(pattern: str) -> Key:
    """The catalogue row for `pattern` (`server.port`, `projects[].path`); KeyError if none."""
    return _BY_PATTERN[pattern]


def keys_of(area: Area) -> tuple[Key, ...]:
    return tuple(key for key in KEYS if key.area is area)
