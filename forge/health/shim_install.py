"""Deploying the sh shim (package data) as `gh` in `$FORGE_HOME/bin`, and saying whether `gh` on
PATH is the shim: an install cannot change its caller's PATH, so it prints the line that does."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final

from forge.files import write_atomic
from forge.health.realgh import is_shim
from forge.health.settings import Settings

SH_SPECIAL_IN_QUOTES: Final = frozenset('"$`\\')
"""Characters that stop a directory from going verbatim inside `"...:$PATH"`."""


def shim_text(python: str = sys.executable) -> bytes:
    """The shim with this interpreter baked in for the paths that need Python."""
    text = resources.files("forge.health").joinpath("shim/gh.sh").read_text()
    return text.replace("@FORGE_PYTHON@", python).encode()


def install(settings: Settings, directory: Path | None = None) -> Path:
    """Write `<dir>/gh` (executable) and create the state dir, so recording starts at once."""
    target_dir = directory if directory is not None else settings.home / "bin"
    target = target_dir / "gh"
    write_atomic(target, shim_text())
    os.chmod(target, 0o755)
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    return target


def gh_on_path(path_env: str | None = None) -> Path | None:
    """What `gh` runs as from a shell with this PATH (the current one by default)."""
    found = shutil.which("gh", path=os.environ.get("PATH", "") if path_env is None else path_env)
    return None if found is None else Path(found)


@dataclass(frozen=True)
class PathLine:
    rcfile: str
    line: str


def path_line(directory: Path, shell: str | None) -> PathLine:
    """The line that puts `directory` first on PATH, for the user's shell (`$SHELL`)."""
    name = Path(shell or "").name
    if name == "fish":
        return PathLine(
            "~/.config/fish/config.fish", f"set -gx PATH {shlex.quote(str(directory))} $PATH"
        )
    rcfile = {"bash": "~/.bashrc", "zsh": "~/.zshrc"}.get(name, "~/.profile")
    text = str(directory)
    if SH_SPECIAL_IN_QUOTES.isdisjoint(text):
        return PathLine(rcfile, f'export PATH="{text}:$PATH"')
    return PathLine(rcfile, f'export PATH={shlex.quote(text)}:"$PATH"')


def bypass_warning(found: Path | None) -> str | None:
    """Why calls are not being recorded, when `gh` on PATH is not a copy of the shim."""
    if found is None:
        return "no gh on PATH: install gh, then `forge shim install` and put its directory first"
    if is_shim(found):
        return None
    return (
        f"gh on PATH is {found}, not forge's shim: calls through it are not recorded, cached or "
        "queued (`forge shim install` prints the line that puts the shim first on PATH)"
    )
