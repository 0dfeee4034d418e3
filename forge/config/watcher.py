"""Noticing forge.toml edits: poll its stat once a second, hash on a change, reload (O-G5).

Polling through the injected Clock rather than watchfiles: the file's folder may not exist yet (a
missing file is a valid config), editors replace the file by rename (a new inode that an inotify
watch on the old one never reports), one stat a second costs nothing, and a test drives the poll
with a ManualClock instead of waiting on a filesystem event. SIGHUP asks for a check at once.

A reload is applied only when the file's fingerprint changed and the file loads; a file that does
not load keeps the config in force and logs `config_reload_failed` with the loader's message. Values
and the settings document are never logged (G11).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from pathlib import Path

from forge.clock import SYSTEM_CLOCK, Clock
from forge.config.loader import ConfigError, LoadedConfig, fingerprint_of, parse_config, read_raw
from forge.logs import get_logger

OnChange = Callable[[LoadedConfig], None]
"""Called with each applied load, on the event loop: it must not block (it schedules sends)."""

Signature = tuple[int, int, int] | None
"""(inode, size, mtime in ns) of the file, None while it is missing."""

_UNSEEN: Signature = (-1, -1, -1)

log = get_logger(__name__)


class ConfigWatcher:
    """Holds the config in force and decides, one check at a time, whether a new load replaces it.

    Its `current` is the load every reader should use; the supervisor may read it directly.
    """

    def __init__(self, path: Path, current: LoadedConfig, on_change: OnChange) -> None:
        self.path = path
        self._current = current
        self._on_change = on_change
        self._signature = _UNSEEN

    @property
    def current(self) -> LoadedConfig:
        return self._current

    def check(self, *, force: bool = False) -> bool:
        """Reload if the file changed; True when a new config was applied. `force` skips the stat
        comparison (SIGHUP), for a change inside one mtime tick."""
        before = _signature(self.path)
        if before == self._signature and not force:
            return False
        try:
            raw = read_raw(self.path)
        except ConfigError as error:
            self._signature = before
            log.warning("config_reload_failed", path=str(self.path), error=str(error))
            return False
        if _signature(self.path) != before:
            return False  # still being written: look again at the next poll
        self._signature = before
        fingerprint = fingerprint_of(raw)
        if fingerprint == self._current.fingerprint:
            return False
        try:
            loaded = parse_config(raw, self.path, overrides=self._current.overrides)
        except ConfigError as error:
            log.warning("config_reload_failed", path=str(self.path), error=str(error))
            return False
        previous, self._current = self._current, loaded
        log.info(
            "config_reloaded",
            path=str(self.path),
            fingerprint=loaded.fingerprint,
            previous=previous.fingerprint,
        )
        self._on_change(loaded)
        return True

    async def run(self, *, clock: Clock = SYSTEM_CLOCK, interval_s: float = 1.0) -> None:
        """Check now, then every `interval_s` on `clock`, and at once on SIGHUP; until cancelled."""
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGHUP, self._on_sighup)
        try:
            while True:
                self.check()
                await clock.sleep(interval_s)
        finally:
            loop.remove_signal_handler(signal.SIGHUP)

    def _on_sighup(self) -> None:
        self.check(force=True)


async def watch_config(
    path: Path,
    current: LoadedConfig,
    on_change: OnChange,
    *,
    clock: Clock = SYSTEM_CLOCK,
    interval_s: float = 1.0,
) -> None:
    """Watch `path` (normally `current.source`) until cancelled, calling `on_change` per reload."""
    await ConfigWatcher(path, current, on_change).run(clock=clock, interval_s=interval_s)


def _signature(path: Path) -> Signature:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns)
