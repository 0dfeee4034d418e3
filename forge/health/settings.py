"""Every FORGE_* knob of forge health, read once from the environment with its default.

The sh shim reads the same names (FORGE_HOME, FORGE_STATE, FORGE_CACHE, FORGE_QUEUE, FORGE_REPLAY,
FORGE_NOW_MS); the defaults here and there must agree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from forge import paths
from forge.clock import SYSTEM_CLOCK, Clock, PinnedClock
from forge.errors import UserError
from forge.testhooks import NOW_MS


class SettingError(UserError):
    """A FORGE_* variable or flag holds something that is not a non-negative integer."""


def non_negative_int(text: str, name: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise SettingError(f"{name} must be a whole number of seconds, not {text!r}") from None
    if value < 0:
        raise SettingError(f"{name} must not be negative, got {value}")
    return value


@dataclass(frozen=True)
class Settings:
    home: Path
    """FORGE_HOME: the shim lives in `home/bin`."""
    state_dir: Path
    """FORGE_STATE: observations.log, health.json, the cache events and the replay breadcrumb."""
    ttl_s: int = 60
    window_s: int = 300
    cache_enabled: bool = True
    cache_max_age_s: int = 86_400
    queue_enabled: bool = True
    queue_max: int = 500
    queue_attempts: int = 3
    queue_batch: int = 25
    replay_enabled: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env

        def number(name: str, default: int) -> int:
            text = env.get(name, "")
            return non_negative_int(text, name) if text else default

        home = Path(env["FORGE_HOME"]) if env.get("FORGE_HOME") else paths.state_dir()
        state = Path(env["FORGE_STATE"]) if env.get("FORGE_STATE") else home / "forge"
        return cls(
            home=home,
            state_dir=state,
            ttl_s=number("FORGE_TTL", 60),
            window_s=number("FORGE_WINDOW", 300),
            cache_enabled=env.get("FORGE_CACHE", "1") != "0",
            cache_max_age_s=number("FORGE_CACHE_MAX_AGE", 86_400),
            queue_enabled=env.get("FORGE_QUEUE", "1") != "0",
            queue_max=number("FORGE_QUEUE_MAX", 500),
            queue_attempts=number("FORGE_QUEUE_ATTEMPTS", 3),
            queue_batch=number("FORGE_QUEUE_BATCH", 25),
            replay_enabled=env.get("FORGE_REPLAY", "1") != "0",
        )


def clock_from_env(env: Mapping[str, str] | None = None) -> Clock:
    """FORGE_NOW_MS pins the wall clock for the processes a test starts; otherwise the real one."""
    env = os.environ if env is None else env
    pinned = NOW_MS.value(env)
    if pinned:
        return PinnedClock(non_negative_int(pinned, NOW_MS.env) / 1000)
    return SYSTEM_CLOCK


def project_root(start: Path | None = None) -> Path | None:
    """The nearest directory holding `.git`, walking up as the shim does; None outside a project."""
    here = (start or Path.cwd()).absolute()
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return directory
    return None


def project_store(root: Path) -> Path:
    """`<project>/.forge` with a `.gitignore` of `*`, so nothing in it is ever committed and the
    project never looks dirty. Every path that creates `.forge` goes through here (the shim,
    in sh, writes the same file when it creates the cache)."""
    store = root / ".forge"
    store.mkdir(parents=True, exist_ok=True)
    ignore = store / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")
    return store
