"""The speech-to-text engine: faster-whisper on the CPU, one loaded model, one decode at a time.

Every call pads to Whisper's 30 s window, so the encoder costs the same however short the audio
(about 0.2 s on an idle core): a take's window is read each time a pause closes a segment, and a
partial reads it with one beam. Every read is at `temperature=0` with no fallback: faster-whisper's
default retries a low-confidence read warmer (up to T=1.0, a second or more for a mid-word
snippet), and a warmer read samples, so the same audio would not always land the same words. A
segment Whisper itself calls no speech (`no_speech_prob` above `NO_SPEECH_MAX`) lands no words:
Whisper says "You" over silence, and noise the voice gate let through is dropped here.

A read of more than `TIMESTAMPS_S` asks for timestamps, as Whisper was trained to read a 30 s
window: without them tiny.en skipped whole sentences of dense speech (the corpus's long take read
in stretches of about 22 s: 35 % WER without, 19 % with), while a sentence or two reads as well or
better without (23.1 % beside 24.1 % on the `unseen` and `paused` clips). A read is prompted
with the tokens of the take's final words (`windows.py`); several windows in one read are each
conditioned on the ones before, as faster-whisper's long-form mode does. A `window` read (a
take's `commit`) keeps only its first window's segments and says where the last of them ends
(faster-whisper goes on to read from there to the end of the audio; the take reads that again,
whole, as the head of its next window).
"""

from __future__ import annotations

from collections.abc import Sequence

from faster_whisper import WhisperModel

from forge.workers.dictate.audio import RATE, to_float
from forge.workers.dictate.models import ModelChoice
from forge.workers.dictate.windows import Heard

NO_SPEECH_MAX = 0.6
FINAL_BEAM = 5
"""Finals are read with 5 beams at `temperature=0` and no fallback: a warmer retry samples, so
the same audio could land different words (espeak-ng en-gb did: 29 % one run, 100 % the next)."""
TIMESTAMPS_S = 10.0


class Engine:
    """One model; `hear` blocks, so the worker calls it from a thread, one call at a time."""

    def __init__(self, choice: ModelChoice, cpu_threads: int) -> None:
        self.choice = choice
        self._model = WhisperModel(
            str(choice.path), device="cpu", compute_type="int8", cpu_threads=cpu_threads
        )

    def hear(
        self,
        pcm: bytes,
        *,
        partial: bool = False,
        prompt: Sequence[int] = (),
        window: bool = False,
    ) -> Heard:
        """The words in `pcm` (i16 mono 16 kHz), no-speech segments dropped; `prompt` is the
        tokens of the words before it; `window` reads its first 30 s window alone."""
        segments, _ = self._model.transcribe(
            to_float(pcm),
            language="en",
            beam_size=1 if partial else FINAL_BEAM,
            temperature=0.0,
            condition_on_previous_text=True,
            initial_prompt=list(prompt) or None,
            without_timestamps=not window and len(pcm) / 2 / RATE <= TIMESTAMPS_S,
            vad_filter=False,
        )
        texts: list[str] = []
        tokens: list[int] = []
        finished: float | None = None
        for segment in segments:
            if window and segment.seek != 0:
                break
            finished = segment.end
            if segment.no_speech_prob <= NO_SPEECH_MAX:
                texts.append(segment.text.strip())
                tokens.extend(segment.tokens)
        return Heard(
            " ".join(t for t in texts if t),
            tuple(tokens),
            round(finished * 1000) if window and finished is not None else None,
        )

    def long_form(self, pcm: bytes) -> str:
        """faster-whisper's own long-form mode on the whole of `pcm` (30 s windows with
        timestamps, each conditioned on the text before, forge's beam and temperature): what a
        long take's words are measured against."""
        segments, _ = self._model.transcribe(
            to_float(pcm), language="en", beam_size=FINAL_BEAM, temperature=0.0, vad_filter=False
        )
        return " ".join(s.text.strip() for s in segments if s.no_speech_prob <= NO_SPEECH_MAX)
