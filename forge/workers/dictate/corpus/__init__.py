"""The dictation corpus: committed WAVs (16 kHz mono i16), what each one says, and the long takes
made of them.

`forge dictate bench`, `bench/dictate.py` and the dictation tests read the same clips; `make.py`
beside this file is how they were made and describes the sets (`local`, `unseen`, `paused`) and
the long takes (`long`: clips end to end, built here, never stored).
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
    """`flite:slt`, `espeak-ng:en-us`, ..., `silence`, `noise`, or `mixed` (a long take)."""
    text: str
    """What the clip says ("" for silence and noise: nothing may land)."""
    condition: str = "clean"
    """What was done to the voice: noise and its SNR, a phone's band, a room."""
    group: str = "local"
    """`local`, `unseen`, `paused` or `long`."""
    parts: tuple[Clip, ...] = ()
    """A long take's clips, end to end (it has no file of its own)."""

    @property
    def path(self) -> Path:
        return HERE / f"{self.name}.wav"

    def samples(self) -> bytes:
        """The clip's i16 little-endian samples at 16 kHz."""
        if self.parts:
            return b"".join(part.samples() for part in self.parts)
        with wave.open(str(self.path), "rb") as clip:
            if (clip.getframerate(), clip.getnchannels(), clip.getsampwidth()) != (16000, 1, 2):
                raise ValueError(f"{self.path} is not 16 kHz mono i16")
            return clip.readframes(clip.getnframes())


def load() -> list[Clip]:
    """Every clip of the corpus, in the manifest's order (a long take after its parts)."""
    rows = json.loads(MANIFEST.read_text(encoding="utf-8"))
    clips: dict[str, Clip] = {}
    for row in rows:
        parts = tuple(clips[name] for name in row.get("parts", ()))
        text = row.get("text", " ".join(part.text for part in parts))
        clips[row["name"]] = Clip(
            row["name"],
            row["voice"],
            text,
            row.get("condition", "clean"),
            row.get("group", "local"),
            parts,
        )
    return list(clips.values())


def named(*names: str) -> list[Clip]:
    """The clips with these names, in the order given; a name the corpus lacks is a KeyError."""
    clips = {clip.name: clip for clip in load()}
    return [clips[name] for name in names]
