"""The typed, frozen view of a loaded forge.toml that the rest of forge reads.

Every field here was validated against the catalogue; consumers never see a raw TOML value.
Durations are floats in seconds, paths are absolute `Path`s, unset optional strings are None.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PROFILE = "default"
"""The browser profile of a project whose entry and org name none."""

FALLBACK_SHELL = "/bin/sh"
"""The shell when neither the project, [terminal] nor $SHELL names one."""


@dataclass(frozen=True)
class ServerConfig:
    bind: str
    port: int
    allowed_origins: tuple[str, ...]
    auth: str
    """"token" (every upgrade shows the token) or "none" (a loopback bind only)."""
    tls_cert: Path | None
    tls_key: Path | None
    ping_interval_s: float
    ping_timeout_s: float
    write_timeout_s: float
    watchdog_s: float


@dataclass(frozen=True)
class ClientConfig:
    """A client's look; None means the client's built-in value, never a failure."""

    mark: str | None
    theme: str | None
    font: str | None


@dataclass(frozen=True)
class DictateConfig:
    enabled: bool
    styling: str
    structure: str
    context: str
    models_dir: Path | None = None


@dataclass(frozen=True)
class TtsConfig:
    enabled: bool = False
    engine: str = "espeak-ng"
    voice: str | None = None
    piper_model: Path | None = None


@dataclass(frozen=True)
class ProjectConfig:
    org: str
    name: str
    path: Path
    shell: str | None
    browser_profile: str | None
    document_roots: tuple[Path, ...]


@dataclass(frozen=True)
class OrgConfig:
    name: str
    browser_profile: str | None


@dataclass(frozen=True)
class TerminalConfig:
    shell: str | None


@dataclass(frozen=True)
class BrowserConfig:
    chromium_path: Path
    idle_close_s: float
    home_url: str
    audio: bool


@dataclass(frozen=True)
class DocumentsConfig:
    max_size_mib: int


@dataclass(frozen=True)
class LogConfig:
    level: str
    max_size_mib: int
    backups: int
    loop_stall_ms: int


@dataclass(frozen=True)
class LabConfig:
    dask_no_worker_s: float
    """How long a Dask run's tasks may wait with no worker on the scheduler before it aborts."""
    limit_pids: int
    """What one attempt may use at a time: processes and threads, memory and disk written (MiB),
    open files per process (forge.attempt.limits)."""
    limit_memory_mib: int
    limit_disk_mib: int
    limit_open_files: int


@dataclass(frozen=True)
class AgentConfig:
    cli_path: Path | None = None
    """A `claude` of the person's own; None: the agent SDK's bundled CLI, else `claude` on PATH."""


@dataclass(frozen=True)
class ForgeConfig:
    server: ServerConfig
    client: ClientConfig
    dictate: DictateConfig
    projects: tuple[ProjectConfig, ...]
    orgs: tuple[OrgConfig, ...]
    terminal: TerminalConfig
    browser: BrowserConfig
    documents: DocumentsConfig
    log: LogConfig
    lab: LabConfig
    tts: TtsConfig = TtsConfig()
    agent: AgentConfig = AgentConfig()

    def project(self, org: str, name: str) -> ProjectConfig | None:
        """The configured project `org/name`, or None (a seat of an unknown project is refused)."""
        for project in self.projects:
            if project.org == org and project.name == name:
                return project
        return None

    def org(self, name: str) -> OrgConfig | None:
        for org in self.orgs:
            if org.name == name:
                return org
        return None

    def browser_profile_for(self, project: ProjectConfig) -> str:
        """The project's own profile, else its org's, else `default`."""
        if project.browser_profile is not None:
            return project.browser_profile
        org = self.org(project.org)
        if org is not None and org.browser_profile is not None:
            return org.browser_profile
        return DEFAULT_PROFILE

    def shell_for(self, project: ProjectConfig, environ: Mapping[str, str] = os.environ) -> str:
        """The project's shell, else [terminal] shell, else $SHELL, else /bin/sh."""
        return project.shell or self.terminal.shell or environ.get("SHELL") or FALLBACK_SHELL
