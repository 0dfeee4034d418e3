"""Reloading forge.toml: a real file, a poll driven by a ManualClock, records read from the log."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from forge.config import ConfigWatcher, LoadedConfig, load_config, watch_config
from forge.config.watcher import SETTLE_S
from forge.logs import LOG_FILE_ENV, configure
from forge.testing.clock import ManualClock

FIRST = '[server]\nport = 9001\n\n[client]\ntheme = "dusk"\n'
SECOND = '[server]\nport = 9002\n\n[client]\ntheme = "secret-theme-value"\n'


@pytest.fixture
def log_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Send forge's records to a real JSON-lines file for the test, and nowhere afterwards."""
    path = tmp_path / "forge.log"
    monkeypatch.setenv(LOG_FILE_ENV, "")
    configure(path, to_stderr=False)
    yield path
    configure(None, to_stderr=False)


def records(log_file: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log_file.read_text().splitlines()]


def named(log_file: Path, record: str) -> list[dict[str, Any]]:
    return [entry for entry in records(log_file) if entry["record"] == record]


def rewrite(path: Path, text: str) -> None:
    """Save the way editors do: a temporary file renamed over the old one."""
    staged = path.with_suffix(".tmp")
    staged.write_text(text, encoding="utf-8")
    os.replace(staged, path)


@pytest.fixture
def watched(write_config: Callable[[str], Path]) -> tuple[ConfigWatcher, list[LoadedConfig]]:
    path = write_config(FIRST)
    applied: list[LoadedConfig] = []
    return ConfigWatcher(path, load_config(path), applied.append), applied


def test_an_unchanged_file_is_not_reloaded(
    watched: tuple[ConfigWatcher, list[LoadedConfig]],
) -> None:
    watcher, applied = watched
    watcher.path.write_text(FIRST)
    assert watcher.check() is False
    assert applied == []


def test_a_changed_file_is_applied_and_logged(
    watched: tuple[ConfigWatcher, list[LoadedConfig]], log_file: Path
) -> None:
    watcher, applied = watched
    before = watcher.current.fingerprint
    rewrite(watcher.path, SECOND)
    assert watcher.check() is True
    assert [loaded.config.server.port for loaded in applied] == [9002]
    assert watcher.current is applied[0]
    (record,) = named(log_file, "config_reloaded")
    assert record["path"] == str(watcher.path)
    assert (record["previous"], record["fingerprint"]) == (before, applied[0].fingerprint)
    assert watcher.check() is False


def test_a_comment_only_edit_is_a_new_fingerprint(
    watched: tuple[ConfigWatcher, list[LoadedConfig]],
) -> None:
    watcher, applied = watched
    rewrite(watcher.path, "# edited\n" + FIRST)
    assert watcher.check() is True
    assert applied[0].config == load_config(watcher.path).config
    assert applied[0].fingerprint != load_config(watcher.path.with_name("x.toml")).fingerprint


def test_a_broken_file_keeps_the_config_and_logs_once(
    watched: tuple[ConfigWatcher, list[LoadedConfig]], log_file: Path
) -> None:
    watcher, applied = watched
    kept = watcher.current
    rewrite(watcher.path, "[server]\nport = 0\n")
    assert watcher.check() is False
    assert watcher.check() is False
    assert applied == []
    assert watcher.current is kept
    (record,) = named(log_file, "config_reload_failed")
    assert record["error"] == (
        f"{watcher.path} line 2: server.port: expected an integer from 1 to 65535, got 0"
    )
    assert record["level"] == "warning"
    rewrite(watcher.path, SECOND)
    assert watcher.check() is True
    assert applied[0].config.server.port == 9002


def test_a_deleted_file_is_the_defaults_again(
    watched: tuple[ConfigWatcher, list[LoadedConfig]],
) -> None:
    watcher, applied = watched
    watcher.path.unlink()
    assert watcher.check() is True
    assert applied[0].config.server.port == 8790
    assert applied[0].raw == b""


def test_a_file_created_later_in_a_new_folder_is_picked_up(tmp_path: Path) -> None:
    path = tmp_path / "not-yet" / "forge.toml"
    applied: list[LoadedConfig] = []
    watcher = ConfigWatcher(path, load_config(path), applied.append)
    assert watcher.check() is False
    path.parent.mkdir()
    rewrite(path, FIRST)
    assert watcher.check() is True
    assert applied[0].config.server.port == 9001


def test_an_unreadable_file_keeps_the_config(
    watched: tuple[ConfigWatcher, list[LoadedConfig]], log_file: Path
) -> None:
    watcher, applied = watched
    watcher.path.unlink()
    watcher.path.mkdir()
    assert watcher.check() is False
    assert watcher.check() is False
    assert applied == []
    (record,) = named(log_file, "config_reload_failed")
    assert record["error"] == f"{watcher.path}: cannot read: Is a directory"


def test_command_line_overrides_survive_a_reload(write_config: Callable[[str], Path]) -> None:
    path = write_config(FIRST)
    applied: list[LoadedConfig] = []
    watcher = ConfigWatcher(
        path, load_config(path, overrides={"server.port": 9500}), applied.append
    )
    rewrite(path, SECOND)
    assert watcher.check() is True
    assert applied[0].config.server.port == 9500
    assert applied[0].config.client.theme == "secret-theme-value"


def test_values_and_the_document_stay_out_of_the_log(
    watched: tuple[ConfigWatcher, list[LoadedConfig]], log_file: Path
) -> None:
    """G11: the settings document crosses the socket unredacted and is never logged."""
    watcher, applied = watched
    rewrite(watcher.path, SECOND)
    assert watcher.check() is True
    assert "secret-theme-value" in json.dumps(applied[0].document)
    assert named(log_file, "config_reloaded")
    assert "secret-theme-value" not in log_file.read_text()


async def parked(clock: ManualClock) -> None:
    """One turn of the loop runs the watcher's first check (synchronous) up to its sleep."""
    await asyncio.sleep(0)
    assert clock.sleepers == 1


async def test_the_poll_runs_on_the_clock(write_config: Callable[[str], Path]) -> None:
    path = write_config(FIRST)
    clock = ManualClock()
    changed = asyncio.Event()
    applied: list[LoadedConfig] = []

    def on_change(loaded: LoadedConfig) -> None:
        applied.append(loaded)
        changed.set()

    task = asyncio.create_task(
        watch_config(path, load_config(path), on_change, clock=clock, interval_s=1.0)
    )
    try:
        await parked(clock)
        rewrite(path, SECOND)
        clock.advance(0.5)
        assert clock.sleepers == 1
        assert applied == []
        clock.advance(0.5)
        await parked(clock)
        assert applied == []  # seen once: applied only when a second read agrees
        clock.advance(SETTLE_S)
        await asyncio.wait_for(changed.wait(), timeout=10)
        assert [loaded.config.server.port for loaded in applied] == [9002]
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_text_read_mid_rewrite_is_never_applied(write_config: Callable[[str], Path]) -> None:
    """An in-place rewrite read between its truncation and its write reads empty (a valid,
    all-defaults config): that read is not applied, the settled text is."""
    path = write_config(FIRST)
    clock = ManualClock()
    applied: list[LoadedConfig] = []
    changed = asyncio.Event()

    def on_change(loaded: LoadedConfig) -> None:
        applied.append(loaded)
        changed.set()

    task = asyncio.create_task(
        watch_config(path, load_config(path), on_change, clock=clock, interval_s=1.0)
    )
    try:
        await parked(clock)
        path.write_text("")  # truncated, the poll reads it so
        clock.advance(1.0)
        await parked(clock)
        path.write_text(SECOND)  # the write lands before the second read
        clock.advance(SETTLE_S)
        await parked(clock)
        assert applied == []
        clock.advance(1.0)
        await parked(clock)
        clock.advance(SETTLE_S)
        await asyncio.wait_for(changed.wait(), timeout=10)
        assert [loaded.config.server.port for loaded in applied] == [9002]
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_sighup_reloads_without_waiting_for_the_poll(
    write_config: Callable[[str], Path],
) -> None:
    path = write_config(FIRST)
    clock = ManualClock()
    changed = asyncio.Event()
    watcher = ConfigWatcher(path, load_config(path), lambda loaded: changed.set())
    task = asyncio.create_task(watcher.run(clock=clock, interval_s=3600))
    try:
        await parked(clock)
        rewrite(path, SECOND)
        os.kill(os.getpid(), signal.SIGHUP)
        await asyncio.wait_for(changed.wait(), timeout=10)
        assert watcher.current.config.server.port == 9002
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert signal.getsignal(signal.SIGHUP) == signal.SIG_DFL
