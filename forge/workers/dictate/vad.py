"""Which 20 ms frames hold a voice: webrtcvad behind an energy floor.

webrtcvad alone calls steady noise speech (every frame of the corpus's noise clip), and Whisper
says "You" over digital silence, so a frame counts as voiced only when it is loud enough to be a
voice at all and webrtcvad agrees. What still gets through (noise loud enough) is dropped later by
the engine's no-speech filter.
"""

from __future__ import annotations

from typing import Protocol

import webrtcvad

from forge.workers.dictate.audio import RATE, dbfs, mean_square

FLOOR_DBFS = -50.0
"""Quieter than this is no voice (a phone's mic noise floor sits around -60 dBFS)."""
AGGRESSIVENESS = 2
"""webrtcvad's mode, 0 (keeps most) to 3 (drops most)."""


class Classifier(Protocol):
    def voiced(self, frame: bytes) -> bool: ...


class VoiceGate:
    """webrtcvad's verdict on frames above the energy floor."""

    def __init__(self, aggressiveness: int = AGGRESSIVENESS, floor_dbfs: float = FLOOR_DBFS):
        self._vad = webrtcvad.Vad(aggressiveness)
        self._floor = floor_dbfs

    def voiced(self, frame: bytes) -> bool:
        if dbfs(mean_square(frame) ** 0.5) < self._floor:
            return False
        return bool(self._vad.is_speech(frame, RATE))
