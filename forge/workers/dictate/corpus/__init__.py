"""The local dictation corpus: short committed WAVs (16 kHz mono i16) and what each one says.

`forge dictate bench` and the dictation tests read the same clips; `make.py` beside this file is
how they were made (flite `slt`, espeak-ng en-us and en-gb, two seconds of silence and of noise).
"""

from __future__ import annotations

import json
import wave
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
MANIFEST = HERE / "corpus.json"


@dataclass(frozen=True, slots=True)
class Clip:
    name: str
    voice: str
    """`flite:slt`, `espeak-ng:en-us`, `silence` or `noise`."""
    text: str
    """What the clip says ("" for silence and noise: nothing may land)."""

    @property
    def path(self) -> Path:
        return HERE / f"{self.name}.wav"

    def samples(self) -> bytes:
        """The clip's i16 little-endian samples at 16 kHz."""
        with wave.open(str(self.path), "rb") as clip:
            if (clip.getframerate(), clip.getnchannels(), clip.getsampwidth()) != (16000, 1, 2):
                raise ValueError(f"{self.path} is not 16 kHz mono i16")
            return clip.readframes(clip.getnframes())


def load() -> list[Clip]:
    """Every clip of the corpus, in the manifest's order."""
    rows = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return [Clip(row["name"], row["voice"], row["text"]) for row in rows]
