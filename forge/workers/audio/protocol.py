"""The sound server's protocol: one PulseAudio daemon, a null sink per browser profile.

The worker owns the daemon as its child and the sinks loaded into it. The supervisor starts it
on the first browser host, asks it for a profile's sink before that profile's Chromium starts
(`Sink`), and asks again after each restart: a new daemon has no sinks. Nothing else crosses:
the daemon's death is the worker's exit, and the lifecycle restarts both.
This module is all the supervisor imports of `forge.workers.audio`.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import msgspec

from forge.errors import UserError
from forge.ipc.protocol import WorkerProtocol, WorkerRequest

PULSEAUDIO = "pulseaudio"
PACTL = "pactl"
"""Looked up on PATH when the sound server starts (Debian's pulseaudio, pulseaudio-utils)."""

SOCKET_NAME = "native"
"""The daemon's native-protocol socket, in the sound directory."""

RATE = 48000
CHANNELS = 2
"""Every sink, and every kind-2 frame, is 48 kHz stereo s16le: Chromium's own rate, no resample."""


class AudioConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The worker's config: which daemon to run, where its socket and files live."""

    executable: str
    """The `pulseaudio` binary."""
    pactl: str
    """The `pactl` binary, which loads the sinks."""
    directory: str
    """A private (0700) directory: the socket, daemon.conf, the daemon's runtime files."""
    log_file: str


class SoundMissing(UserError):
    """This machine has no PulseAudio: browsers run, silent to their viewers."""

    def __init__(self, missing: str) -> None:
        super().__init__(
            f"no {missing} on this machine: install Debian's pulseaudio and pulseaudio-utils "
            "(apt-get install pulseaudio pulseaudio-utils) to hear browser tabs"
        )


def find_binaries() -> tuple[Path, Path]:
    """(pulseaudio, pactl) from PATH, or `SoundMissing` naming the first one missing."""
    found = []
    for name in (PULSEAUDIO, PACTL):
        path = shutil.which(name)
        if path is None:
            raise SoundMissing(name)
        found.append(Path(path))
    return found[0], found[1]


def server_address(directory: Path) -> str:
    """What a PulseAudio client is given as its server (`PULSE_SERVER`)."""
    return f"unix:{directory / SOCKET_NAME}"


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def sink_name(profile_key: str) -> str:
    """A profile's null sink: `forge.<org>.<name>`, with anything PulseAudio refuses as `_`."""
    return "forge." + _UNSAFE.sub("_", profile_key.replace("/", "."))


class SinkReady(msgspec.Struct, frozen=True):
    sink: str
    created: bool
    """False when the sink was already there (this daemon made it for an earlier host)."""


class Sink(WorkerRequest[SinkReady], tag="sink", frozen=True):
    """Make the profile's null sink unless this daemon already has it."""

    name: str


AUDIO = WorkerProtocol(kind="audio", module="forge.workers.audio", requests=(Sink,))
