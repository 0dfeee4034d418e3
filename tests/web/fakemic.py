"""Chromium's fake microphone playing a corpus sentence, for the dictation tests."""

from __future__ import annotations

import wave
from pathlib import Path

from forge.workers.dictate import corpus

CLIP = "flite-1"
LEAD_S = 1.5
TAIL_S = 3.0
"""The fake microphone loops its file: silence around the sentence keeps one take to one copy."""
DICTATION = "[dictate]\nenabled = true\n[tts]\nenabled = true\n"
DECODE_MS = 240_000
"""How long a take's end may take on a loaded two-core machine (model load, queued decodes)."""


def padded_sentence(folder: Path) -> tuple[Path, str, float]:
    """The corpus clip with silence before and after it, written in `folder`: its path, its
    words, its seconds."""
    clip = next(clip for clip in corpus.load() if clip.name == CLIP)
    with wave.open(str(clip.path)) as source:
        rate, pcm = source.getframerate(), source.readframes(source.getnframes())
        assert (source.getnchannels(), source.getsampwidth()) == (1, 2)
    path = folder / f"{CLIP}-padded.wav"
    with wave.open(str(path), "wb") as padded:
        padded.setnchannels(1)
        padded.setsampwidth(2)
        padded.setframerate(rate)
        padded.writeframes(bytes(int(rate * LEAD_S) * 2) + pcm + bytes(int(rate * TAIL_S) * 2))
    return path, clip.text, len(pcm) / 2 / rate


def fake_mic_args(wav: Path) -> list[str]:
    """Chromium's switches for a microphone that is `wav`, granted without asking, and sound
    that plays without a gesture."""
    return [
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={wav}",
        "--autoplay-policy=no-user-gesture-required",
    ]
