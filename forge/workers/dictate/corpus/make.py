"""Regenerate the dictation corpus: `python -m forge.workers.dictate.corpus.make` (needs flite and
espeak-ng on PATH). The WAVs are committed; this script is how they were made.

Every clip is 16 kHz mono i16, the wire's kind-0 format. flite's `slt` voice is deterministic and
tiny.en hears it almost perfectly (the absolute gate); espeak-ng is deterministic too and much
harder for tiny.en (the relative gate). Silence and noise must land no words at all. espeak-ng
renders at 22050 Hz, so its clips are resampled here (band-limited, by FFT) before they are
written.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np

from forge.workers.dictate.audio import resample
from forge.workers.dictate.corpus import HERE, MANIFEST, Clip

RATE = 16000

CLIPS = (
    Clip("flite-1", "flite:slt", "Please open the terminal and run the tests."),
    Clip("flite-2", "flite:slt", "The build finished without any errors today."),
    Clip("flite-3", "flite:slt", "Send the report to the team before lunch."),
    Clip("flite-4", "flite:slt", "Move the window to the left side of the screen."),
    Clip("flite-5", "flite:slt", "Remember to save the file before you close it."),
    Clip("flite-6", "flite:slt", "Check the logs for the last failed request."),
    Clip("espeak-us-1", "espeak-ng:en-us", "Please open the terminal and run the tests."),
    Clip("espeak-us-2", "espeak-ng:en-us", "Send the report to the team before lunch."),
    Clip("espeak-gb-1", "espeak-ng:en-gb", "The build finished without any errors today."),
    Clip("espeak-gb-2", "espeak-ng:en-gb", "Remember to save the file before you close it."),
    Clip("silence", "silence", ""),
    Clip("noise", "noise", ""),
)


def render(clip: Clip) -> np.ndarray:
    """The clip's samples as int16 at 16 kHz."""
    engine, _, voice = clip.voice.partition(":")
    if engine == "flite":
        out = subprocess.run(
            ["flite", "-voice", voice, "-t", clip.text, "-o", "/dev/stdout"],
            check=True,
            capture_output=True,
        ).stdout
        return _read_wav(out)
    if engine == "espeak-ng":
        out = subprocess.run(
            ["espeak-ng", "-v", voice, "-w", "/dev/stdout", clip.text],
            check=True,
            capture_output=True,
        ).stdout
        return _read_wav(out)
    if engine == "silence":
        return np.zeros(RATE * 2, dtype=np.int16)
    if engine == "noise":
        rng = np.random.default_rng(15)
        return (rng.normal(0.0, 0.05, RATE * 2) * 32767).astype(np.int16)
    raise ValueError(f"unknown voice {clip.voice}")


def _read_wav(data: bytes) -> np.ndarray:
    """A mono i16 WAV's samples at 16 kHz (the length field of a piped WAV is not trusted)."""
    start = data.index(b"data") + 8
    with wave.open(io.BytesIO(data[:start] + b"\0" * 2)) as header:
        rate = header.getframerate()
    samples = np.frombuffer(data[start : len(data) - (len(data) - start) % 2], dtype="<i2")
    return samples if rate == RATE else resample(samples, rate, RATE)


def write_wav(path: Path, samples: np.ndarray) -> None:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(samples.astype("<i2").tobytes())


def main() -> int:
    for clip in CLIPS:
        write_wav(HERE / f"{clip.name}.wav", render(clip))
    manifest = [{"name": c.name, "voice": c.voice, "text": c.text} for c in CLIPS]
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(CLIPS)} clips to {HERE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
