"""The sound server as the browser service uses it: started with the first browser host, one
sink per profile, and the one line a profile's row shows while its sound cannot reach viewers.

The server is the `audio` worker (`forge.workers.audio`), which owns the PulseAudio daemon. A
profile's sink is made before its host starts, so Chromium finds it from its first sound; after
the server restarts (a new daemon, with no sinks), `tabsound.TabSound` asks for every live
profile's sink again and tells its host to reconnect. A machine without PulseAudio, or
`[browser] audio = false`, never starts it: hosts run without sound and their rows say why.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec

from forge import paths
from forge.ipc.errors import WorkerError
from forge.ipc.manager import WorkerHandle, WorkerManager, WorkerRow, WorkerState
from forge.ipc.protocol import call
from forge.logs import get_logger
from forge.workers.audio.protocol import (
    AUDIO,
    SOCKET_NAME,
    AudioConfig,
    Sink,
    SoundMissing,
    find_binaries,
    server_address,
    sink_name,
)
from forge.workers.browser.protocol import AudioRoute

log = get_logger(__name__)

WORKER_NAME = "audio"
READY_S = 10.0
"""How long a host start waits for the sound server to come up (it takes ~0.5 s)."""
SINK_S = 5.0
"""The deadline of one sink request (a `pactl` call or two)."""
MAX_SOCKET_PATH = 100
"""A Unix socket path is at most 107 bytes; past this the server's socket lives in the worker
manager's private directory (short by construction, removed when the manager closes)."""

OFF = "sound is off here: [browser] audio = false"
_SETTLED = frozenset({WorkerState.READY, WorkerState.FAILED, WorkerState.STOPPED})


class SoundService:
    """Starts the sound server on first use and makes profiles' sinks in it."""

    def __init__(
        self, manager: WorkerManager, *, enabled: bool, on_change: Callable[[], None]
    ) -> None:
        self._manager = manager
        self._on_change = on_change
        self._handle: WorkerHandle | None = None
        self._binaries: tuple[Path, Path] | None = None
        self.off: str | None = OFF
        """Why the server is never started here, or None."""
        if enabled:
            try:
                self._binaries = find_binaries()
                self.off = None
            except SoundMissing as missing:
                self.off = str(missing)
        self._directory = paths.sound_dir()
        if self.off is None and len(str(self._directory / SOCKET_NAME)) > MAX_SOCKET_PATH:
            self._directory = manager.directory / "sound"

    def route(self, profile_key: str) -> AudioRoute | None:
        """The profile's sink on the server, for its Chromium; None while sound is off."""
        if self.off is not None:
            return None
        return AudioRoute(server_address(self._directory), sink_name(profile_key))

    @property
    def generation(self) -> int | None:
        """Which run of the server is up now (each restart is a new daemon), or None."""
        if self._handle is None or self._handle.row.state is not WorkerState.READY:
            return None
        return self._handle.generation

    def trouble(self) -> str | None:
        """Why no profile's sound reaches viewers now, in one line, or None."""
        if self.off is not None:
            return self.off
        if self._handle is None:
            return None
        row = self._handle.row
        if row.state is WorkerState.READY:
            return None
        if row.state is WorkerState.FAILED:
            return f"the sound server failed: {row.last_reason}"
        if row.state is WorkerState.STARTING and row.restarts == 0:
            return "the sound server is starting"
        return f"the sound server is restarting ({row.last_reason})"

    async def sink(self, profile_key: str) -> int | None:
        """Make the profile's sink, the server started and waited for if need be (bounded);
        the server run it was made in, or None when the server is not up (its row says why)."""
        handle = self._start()
        if handle is None:
            return None
        try:
            row = await handle.wait_for(lambda r: r.state in _SETTLED, within=READY_S)
        except WorkerError as error:
            log.warning("sound_server_not_ready", reason=str(error))
            return None
        if row.state is not WorkerState.READY:
            return None
        generation = handle.generation
        try:
            await call(handle, Sink(name=sink_name(profile_key)), within=SINK_S)
        except WorkerError as error:
            log.warning("sound_sink_failed", profile=profile_key, reason=str(error))
            return None
        return generation

    def _start(self) -> WorkerHandle | None:
        if self.off is not None or self._binaries is None:
            return None
        if self._handle is None:
            pulseaudio, pactl = self._binaries
            config = AudioConfig(
                executable=str(pulseaudio),
                pactl=str(pactl),
                directory=str(self._directory),
                log_file=str(paths.state_dir() / "sound" / "pulseaudio.log"),
            )
            spec = AUDIO.spec(WORKER_NAME, config=msgspec.to_builtins(config))
            self._handle = self._manager.start(spec)
            self._manager.on_change(self._changed)
            log.info("sound_server_starting", directory=str(self._directory))
        return self._handle

    def _changed(self, row: WorkerRow) -> None:
        if self._handle is not None and row.name == self._handle.name:
            self._on_change()
