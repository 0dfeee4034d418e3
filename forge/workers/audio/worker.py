"""The sound server as a supervised worker: it runs PulseAudio and loads the profiles' sinks.

Why a worker of its own, and not a part of each browser host: one daemon serves every profile
(a sink each), so it must outlive any one host (a host restarts with its Chromium, or closes when
idle) and no host may own another's sound. Run under `forge.ipc`, its death is handled the way
every worker's is: when the daemon dies the worker exits 1 and the lifecycle restarts both with
backoff (and marks them `failed` after a crash loop); its row sits beside the others in home's
`workers`. The daemon is the worker's child (`die_with_parent`), so it never outlives forge.

The daemon is an ordinary user process with no D-Bus, no default script (`-n`), and only the
native protocol on a socket in a private 0700 directory, anonymous (the directory is the access
control, as for the worker sockets). `daemon.conf` sets 48 kHz s16le stereo, Chromium's own rate,
so nothing is resampled on the way to a viewer.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import msgspec

from forge.ipc.errors import RequestFailed, WorkerConfigError
from forge.ipc.launcher import launch
from forge.ipc.orphans import die_with_parent
from forge.ipc.worker import Worker, handles
from forge.workers.audio.protocol import (
    AUDIO,
    CHANNELS,
    RATE,
    SOCKET_NAME,
    AudioConfig,
    Sink,
    SinkReady,
    server_address,
)

DAEMON_FAILED_EXIT = 1
"""The worker's exit after its daemon died: an ordinary crash, restarted with backoff."""

READY_WITHIN_S = 8.0
"""How long the daemon may take to accept on its socket (it takes ~0.1 s); inside the
lifecycle's 10 s hello timeout."""
READY_POLL_S = 0.02
STOP_GRACE_S = 1.0
"""After SIGTERM the daemon gets this long before SIGKILL (it exits in a few ms)."""

DAEMON_CONF = f"""\
default-sample-format = s16le
default-sample-rate = {RATE}
default-sample-channels = {CHANNELS}
exit-idle-time = -1
realtime-scheduling = no
"""


class DaemonStartFailed(Exception):
    """The daemon exited or never accepted while starting: a crash the lifecycle retries."""


class AudioWorker(Worker):
    """Owns the PulseAudio daemon; its config is an `AudioConfig`."""

    kind = AUDIO.kind

    async def setup(self) -> None:
        try:
            config = msgspec.convert(self.config, AudioConfig)
        except msgspec.ValidationError as error:
            raise WorkerConfigError(f"audio worker config: {error}") from None
        self.settings = config
        directory = Path(config.directory)
        socket = directory / SOCKET_NAME
        _prepare(directory, Path(config.log_file))
        self._pactl_env = {**os.environ, "PULSE_SERVER": server_address(directory)}
        self._failed: str | None = None
        self.daemon = launch(
            self._argv(config, socket),
            {
                **os.environ,
                "PULSE_CONFIG_PATH": str(directory),
                "PULSE_STATE_PATH": str(directory),
                "PULSE_RUNTIME_PATH": str(directory),
            },
            preexec_fn=die_with_parent,
        )
        self.log.info("audio_daemon_started", pid=self.daemon.pid, socket=str(socket))
        await self._until_accepting(socket)
        self.spawn(self._watch_daemon())

    @staticmethod
    def _argv(config: AudioConfig, socket: Path) -> list[str]:
        return [
            config.executable,
            "--daemonize=no",
            "--system=false",
            "--exit-idle-time=-1",
            "--use-pid-file=no",
            "--no-cpu-limit=yes",
            f"--log-target=newfile:{config.log_file}",
            "-n",
            "-L",
            f"module-native-protocol-unix socket={socket} auth-anonymous=1",
        ]

    async def _until_accepting(self, socket: Path) -> None:
        deadline = self.clock.monotonic() + READY_WITHIN_S
        while self.clock.monotonic() < deadline:
            if self.daemon.exited.done():
                status = self.daemon.exited.result().describe()
                raise DaemonStartFailed(f"pulseaudio stopped while starting ({status})")
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_unix_connection(str(socket))
                writer.close()
                return
            await self.clock.sleep(READY_POLL_S)
        await self._terminate()
        raise DaemonStartFailed(f"pulseaudio did not accept within {READY_WITHIN_S:g} s")

    async def _watch_daemon(self) -> None:
        status = await self.daemon.exited
        self._failed = f"pulseaudio stopped ({status.describe()})"
        self.log.error("audio_daemon_exited", pid=self.daemon.pid, reason=self._failed)
        self.request_stop()

    async def teardown(self) -> None:
        await self._terminate()

    async def _terminate(self) -> None:
        """SIGTERM, a short grace, then SIGKILL (the daemon leads its own process group)."""
        daemon = self.daemon
        if daemon.exited.done():
            return
        daemon.signal_group(signal.SIGTERM)
        grace = asyncio.ensure_future(self.clock.sleep(STOP_GRACE_S))
        racers: set[asyncio.Future[Any]] = {grace, daemon.exited}
        await asyncio.wait(racers, return_when=asyncio.FIRST_COMPLETED)
        grace.cancel()
        if not daemon.exited.done():
            daemon.kill_group()
            await daemon.exited

    async def serve(self) -> int:
        code = await super().serve()
        return DAEMON_FAILED_EXIT if self._failed is not None else code

    @handles(Sink)
    async def sink(self, request: Sink) -> SinkReady:
        listed = await self._pactl("list", "short", "sinks")
        if request.name in (line.split("\t")[1] for line in listed.splitlines() if "\t" in line):
            return SinkReady(request.name, created=False)
        await self._pactl(
            "load-module",
            "module-null-sink",
            f"sink_name={request.name}",
            f"rate={RATE}",
            f"channels={CHANNELS}",
            "format=s16le",
            f"sink_properties=device.description={request.name}",
        )
        self.log.info("audio_sink_created", sink=request.name)
        return SinkReady(request.name, created=True)

    async def _pactl(self, *args: str) -> str:
        process = await asyncio.create_subprocess_exec(
            self.settings.pactl,
            *args,
            env=self._pactl_env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
        if process.returncode != 0:
            words = err.decode(errors="replace").strip() or f"exit {process.returncode}"
            raise RequestFailed("sound_refused", f"pactl {args[0]}: {words}")
        return out.decode(errors="replace")


def _prepare(directory: Path, log_file: Path) -> None:
    """The private directory with `daemon.conf`, no stale socket; the log's folder."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    (directory / "daemon.conf").write_text(DAEMON_CONF)
    (directory / SOCKET_NAME).unlink(missing_ok=True)
    log_file.parent.mkdir(parents=True, exist_ok=True)
