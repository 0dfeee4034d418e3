"""A profile's sound as decisions: which frames are loud enough to send, and to which tabs.

Pure: no I/O, no clock. One PulseAudio null sink carries every tab of a profile (Chromium is one
PulseAudio client per profile, and a tab's streams are not told apart), so the host reads one
monitor and decides here, per 20 ms frame:
- `SilenceGate`: a frame goes out only while the sound is above a level, and for a short hold
  after it drops (a note's tail, the gap between two words), so an idle page costs nothing on the
  wire and a quiet passage is not chopped into clicks;
- `Audibility`: which tabs Chromium says are playing, from the CDP `WebAudio` domain (a running
  realtime AudioContext) and `Media` domain (an element between play and pause);
- `route`: the tabs whose listeners hear a frame.
"""

from __future__ import annotations

import array
import json
import sys
from typing import Any

from forge.workers.audio.protocol import CHANNELS, RATE

FRAME_MS = 20
SAMPLE_BYTES = 2
FRAME_BYTES = RATE * CHANNELS * SAMPLE_BYTES * FRAME_MS // 1000
"""One kind-2 frame's samples: 20 ms of 48 kHz stereo i16, 3840 bytes."""

SILENT_PEAK = 16
"""A frame whose loudest sample is at most this (about -66 dBFS) is silence. Chromium writes
exact zeros when nothing plays; the margin takes dither and denormal tails too."""
HOLD_FRAMES = 10
"""Frames still sent after the sound drops below the gate (200 ms)."""

_ZEROS = bytes(FRAME_BYTES)


def louder_than(samples: bytes, threshold: int) -> bool:
    """Whether any sample's magnitude passes `threshold` (< 256), cheaply: a frame with a high
    byte other than 0x00 or 0xFF has a sample of magnitude 256 or more, found by a C-speed
    slice and translate (a few µs, where reading every sample as a Python int costs ~50)."""
    if samples == _ZEROS[: len(samples)]:
        return False
    if samples[1::2].translate(None, b"\x00\xff"):
        return True
    return peak(samples) > threshold


def peak(samples: bytes) -> int:
    """The largest absolute i16 sample (little-endian, interleaved)."""
    if samples == _ZEROS[: len(samples)]:
        return 0
    values = array.array("h")
    values.frombytes(samples[: len(samples) // 2 * 2])
    if sys.byteorder != "little":
        values.byteswap()
    return max(max(values), -min(values)) if values else 0


class SilenceGate:
    """Passes a frame above `SILENT_PEAK`, and `HOLD_FRAMES` frames after the last such."""

    def __init__(self, threshold: int = SILENT_PEAK, hold: int = HOLD_FRAMES) -> None:
        self._threshold = threshold
        self._hold = hold
        self._left = 0

    def passes(self, samples: bytes) -> bool:
        if louder_than(samples, self._threshold):
            self._left = self._hold
            return True
        if self._left > 0:
            self._left -= 1
            return True
        return False


_MEDIA_PLAYING = "kPlay"
_MEDIA_STOPPED = frozenset({"kPause", "kEnded", "kWebMediaPlayerDestroyed"})


class Audibility:
    """Which tabs Chromium reports playing, from their CDP sessions' events.

    A tab is playing while it has a realtime AudioContext in state `running` (`WebAudio`
    reports these at once) or a media element whose last player event was `kPlay` (the `Media`
    domain batches these, about a second late). Anything else that sounds (a WebRTC call's
    remote track) is not reported: `route` then falls back to the tabs listened to."""

    def __init__(self) -> None:
        self._sources: dict[int, set[str]] = {}

    @property
    def playing(self) -> set[int]:
        return {tab for tab, sources in self._sources.items() if sources}

    def event(self, tab: int, method: str, params: dict[str, Any]) -> None:
        """One CDP event of the tab's session (others are ignored)."""
        if method in {"WebAudio.contextCreated", "WebAudio.contextChanged"}:
            context = params.get("context", {})
            source = f"webaudio:{context.get('contextId')}"
            running = (context.get("contextType"), context.get("contextState")) == (
                "realtime",
                "running",
            )
            self._set(tab, source, running)
        elif method == "WebAudio.contextWillBeDestroyed":
            self._set(tab, f"webaudio:{params.get('contextId')}", False)
        elif method == "Media.playerEventsAdded":
            source = f"media:{params.get('playerId')}"
            for event in params.get("events", []):
                name = _media_event(event)
                if name == _MEDIA_PLAYING:
                    self._set(tab, source, True)
                elif name in _MEDIA_STOPPED:
                    self._set(tab, source, False)

    def forget(self, tab: int) -> None:
        """The tab closed: nothing of it plays."""
        self._sources.pop(tab, None)

    def _set(self, tab: int, source: str, on: bool) -> None:
        sources = self._sources.setdefault(tab, set())
        if on:
            sources.add(source)
        else:
            sources.discard(source)


def _media_event(event: dict[str, Any]) -> str | None:
    """A `Media.PlayerEvent`'s name: its `value` is a JSON object with an `event` field."""
    try:
        value = json.loads(event.get("value", ""))
    except (TypeError, ValueError):
        return None
    name = value.get("event") if isinstance(value, dict) else None
    return name if isinstance(name, str) else None


def route(playing: set[int], listened: set[int]) -> list[int]:
    """The tabs a frame goes to: the listened tabs Chromium says are playing; when it says none
    is, every listened tab (the sound is one it does not report, or reports late)."""
    if playing:
        return sorted(playing & listened)
    return sorted(listened)
