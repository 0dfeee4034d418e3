"""The speech-to-text engine: faster-whisper on the CPU, one loaded model, one decode at a time.

Every call pads to Whisper's 30 s window, so the encoder costs the same however short the audio
(about 0.2 s on an idle core): segments are decoded as they close, and a partial reads the open
segment with one beam. Every read is at `temperature=0` with no fallback: faster-whisper's
default retries a low-confidence read warmer (up to T=1.0, a second or more for a mid-word
snippet), and a warmer read samples, so the same audio would not always land the same words. A
segment Whisper itself calls no speech (`no_speech_prob` above `NO_SPEECH_MAX`) lands no words:
Whisper says "You" over silence, and noise the voice gate let through is dropped here.
"""

from __future__ import annotations

from dataclasses import dataclass

from faster_whisper import WhisperModel

from forge.workers.dictate.audio import to_float
from forge.workers.dictate.models import ModelChoice

NO_SPEECH_MAX = 0.6
FINAL_BEAM = 5
"""Finals are read with 5 beams at `temperature=0` and no fallback: a warmer retry samples, so
the same audio could land different words (espeak-ng en-gb did: 29 % one run, 100 % the next)."""


@dataclass(frozen=True, slots=True)
class Heard:
    text: str
    dropped: int
    """Whisper segments refused by the no-speech filter."""


class Engine:
    """One model; `hear` blocks, so the worker calls it from a thread, one call at a time."""

    def __init__(self, choice: ModelChoice, cpu_threads: int) -> None:
        self.choice = choice
        self._model = WhisperModel(
            str(choice.path), device="cpu", compute_type="int8", cpu_threads=cpu_threads
        )

    def hear(self, pcm: bytes, *, partial: bool = False) -> Heard:
        """The words in `pcm` (i16 mono 16 kHz), no-speech segments dropped."""
        segments, _ = self._model.transcribe(
            to_float(pcm),
            language="en",
            beam_size=1 if partial else FINAL_BEAM,
            temperature=0.0,
            condition_on_previous_text=False,
            without_timestamps=True,
            vad_filter=False,
        )
        kept, dropped = [], 0
        for segment in segments:
            if segment.no_speech_prob > NO_SPEECH_MAX:
                dropped += 1
            else:
                kept.append(segment.text.strip())
        return Heard(" ".join(t for t in kept if t), dropped)
