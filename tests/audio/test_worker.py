"""The sound server as a supervised worker: a real PulseAudio daemon, its sinks, its death."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import psutil
import pytest
import pytest_asyncio

from forge.ipc.manager import WorkerHandle, WorkerManager, WorkerState
from forge.ipc.protocol import call
from forge.supervisor.browser.sound import SoundService
from forge.workers.audio.protocol import (
    AUDIO,
    AudioConfig,
    Sink,
    SoundMissing,
    find_binaries,
    server_address,
    sink_name,
)

WAIT_S = 30.0
"""A guard against a hung test, never a speed claim."""

try:
    PULSEAUDIO, PACTL = find_binaries()
except SoundMissing as missing:
    pytest.skip(str(missing), allow_module_level=True)


@pytest_asyncio.fixture
async def sound(forge_dirs: dict[str, Path]) -> AsyncIterator[tuple[WorkerHandle, Path]]:
    directory = forge_dirs["runtime"] / "sound"
    config = AudioConfig(
        executable=str(PULSEAUDIO),
        pactl=str(PACTL),
        directory=str(directory),
        log_file=str(forge_dirs["state"] / "pulseaudio.log"),
    )
    async with WorkerManager() as manager:
        handle = manager.start(AUDIO.spec("audio", config=msgspec.to_builtins(config)))
        await handle.wait_for(lambda row: row.state is WorkerState.READY, within=WAIT_S)
        yield handle, directory


def pactl(directory: Path, *args: str) -> str:
    env = {"PULSE_SERVER": server_address(directory), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [str(PACTL), *args], env=env, capture_output=True, text=True, check=True
    ).stdout


def daemon(handle: WorkerHandle) -> psutil.Process:
    assert handle.pid is not None
    (found,) = [p for p in psutil.Process(handle.pid).children() if p.name() == "pulseaudio"]
    return found


def test_sink_names_are_what_pulseaudio_takes() -> None:
    assert sink_name("acme/default") == "forge.acme.default"
    assert sink_name("a b/c:d") == "forge.a_b.c_d"


async def test_the_daemon_serves_48k_stereo_and_makes_a_sink_once(
    sound: tuple[WorkerHandle, Path],
) -> None:
    handle, directory = sound
    assert (directory.stat().st_mode & 0o777) == 0o700
    info = await asyncio.to_thread(pactl, directory, "info")
    assert "Default Sample Specification: s16le 2ch 48000Hz" in info
    first = await call(handle, Sink(name="forge.acme.main"), within=WAIT_S)
    again = await call(handle, Sink(name="forge.acme.main"), within=WAIT_S)
    assert (first.created, again.created) == (True, False)
    sinks = await asyncio.to_thread(pactl, directory, "list", "short", "sinks")
    assert [line.split("\t")[1] for line in sinks.splitlines()] == ["forge.acme.main"]
    assert "s16le 2ch 48000Hz" in sinks


async def test_a_killed_daemon_comes_back_through_the_lifecycle_without_its_sinks(
    sound: tuple[WorkerHandle, Path],
) -> None:
    handle, directory = sound
    await call(handle, Sink(name="forge.acme.main"), within=WAIT_S)
    first = daemon(handle)
    generation = handle.generation
    first.kill()
    row = await handle.wait_for(
        lambda r: r.state is WorkerState.READY and handle.generation > generation, within=WAIT_S
    )
    assert row.restarts == 1
    assert row.last_exit == 1  # the worker exits 1 when its daemon dies
    assert daemon(handle).pid != first.pid
    sinks = await asyncio.to_thread(pactl, directory, "list", "short", "sinks")
    assert sinks.strip() == ""  # a new daemon: the supervisor asks for its sinks again
    assert (await call(handle, Sink(name="forge.acme.main"), within=WAIT_S)).created


async def test_the_daemon_dies_with_its_worker(sound: tuple[WorkerHandle, Path]) -> None:
    handle, _ = sound
    found = daemon(handle)
    assert handle.pid is not None
    psutil.Process(handle.pid).kill()
    await asyncio.to_thread(found.wait, WAIT_S)
    assert not found.is_running()


async def test_a_runtime_path_too_long_for_a_socket_puts_the_server_in_the_managers_directory(
    forge_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = forge_dirs["runtime"] / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True, mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep))
    async with WorkerManager() as manager:
        sound = SoundService(manager, enabled=True, on_change=lambda: None)
        route = sound.route("org/tab")
        assert route is not None
        directory = manager.directory / "sound"
        assert route.server == server_address(directory)
        assert not directory.exists()  # made by the server when it starts, not before
        assert await sound.sink("org/tab") is not None
        assert sink_name("org/tab") in pactl(directory, "list", "short", "sinks")
    assert not manager.directory.exists()  # nothing of the server is left behind
