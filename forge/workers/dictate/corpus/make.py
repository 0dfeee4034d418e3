"""Regenerate the dictation corpus: `python -m forge.workers.dictate.corpus.make` (needs flite,
espeak-ng and sox on PATH). The WAVs are committed; this script is how they were made, and it
makes the same bytes each run (every tool is deterministic, sox runs without dither, the noise is
seeded).

Every clip is 16 kHz mono i16, the wire's kind-0 format. Three sets:

- `local`: the first corpus (flite `slt`, espeak-ng en-us and en-gb, silence, noise), the clips
  the socket tests use.
- `unseen`: 24 developer sentences forge was never tuned on, each in two of eight conditions
  (four flite and four espeak-ng voices; clean, pink, white and brown noise at 10-25 dB SNR, a
  phone's band, a faster speaker, a reverberant room).
- `paused`: six sentences with a 1-5 s pause mid-sentence (flite: the two halves rendered and
  the pause put between; espeak-ng: an SSML break), noise running through the pause.

The long takes (`long-a`, `long-b`) are not files: each is every `unseen` and `paused` clip end
to end (each sentence's first rendering, the paused ones, the second renderings; `long-b`
backwards), about 3.3 minutes of speech whose sentences meet at the voices' own 0.2-0.4 s
edges: speech that rarely pauses long enough to close a segment.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import wave
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from forge.workers.dictate.audio import resample
from forge.workers.dictate.corpus import HERE, MANIFEST, Clip

RATE = 16000

LOCAL = (
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

SENTENCES = (
    "Rename the helper to parse settings and update every caller.",
    "Run the unit tests again and show me only the failures.",
    "Add a retry with backoff when the upload times out.",
    "The login page crashes when the password field is empty.",
    "Open a pull request against the main branch when you are done.",
    "Move the database code into its own module.",
    "Why does the build take twice as long since yesterday?",
    "Delete the unused imports and format the whole project.",
    "Write a short summary of the changes for the release notes.",
    "Check whether the cache is cleared after every deploy.",
    "Add a comment explaining why the timeout is so long.",
    "Revert the last commit but keep the configuration file.",
    "The server returns an error when the request body is too large.",
    "Split this class into two smaller ones with clear names.",
    "Make the error message say which file could not be read.",
    "Look through the logs and find where the memory keeps growing.",
    "Replace the global variable with a parameter.",
    "Can you explain what this regular expression matches?",
    "Add type hints to every public function in this file.",
    "The search results are sorted in the wrong order.",
    "Keep the old behavior behind a feature flag for now.",
    "Ask before you delete anything outside the project folder.",
    "Install the missing package and try the build again.",
    "Stop the running job and tell me what it was doing.",
)

PAUSED = (
    ("Open the settings in the editor and", "change the font to a larger size.", 2.0),
    ("Rename the helper that parses the config", "so that it matches the new module name.", 4.0),
    ("When the tests pass", "push the branch and open a pull request.", 1.0),
    ("Add a flag to the command line that", "skips the slow integration tests.", 3.0),
    ("The function returns an empty list when", "the input file does not exist.", 5.0),
    ("Please look at the error in the log and", "tell me which line it comes from.", 2.5),
)


@dataclass(frozen=True, slots=True)
class Condition:
    voice: str
    """`flite:<voice>` or `espeak-ng:<voice>`."""
    label: str
    sox: tuple[str, ...] = ()
    """sox effects applied to the rendered speech."""
    noise: str | None = None
    """`white`, `pink` or `brown`, mixed in at `snr_db` below the speech."""
    snr_db: float = 0.0


CONDITIONS = (
    Condition("flite:slt", "clean"),
    Condition("flite:awb", "pink 20 dB", noise="pink", snr_db=20),
    Condition("flite:rms", "phone band, white 25 dB", ("sinc", "300-3400"), "white", 25),
    Condition("flite:kal16", "brown 10 dB", noise="brown", snr_db=10),
    Condition("espeak-ng:en-us", "clean"),
    Condition("espeak-ng:en-gb-scotland", "pink 15 dB", noise="pink", snr_db=15),
    Condition("espeak-ng:en-us+f3", "15 % faster", ("tempo", "-s", "1.15")),
    Condition("espeak-ng:en-029", "room, pink 25 dB", ("reverb", "40", "norm", "-3"), "pink", 25),
)
PAUSED_CONDITIONS = (0, 1, 2, 4, 5, 3)
"""The condition each paused sentence is rendered in."""


@dataclass(frozen=True, slots=True)
class Script:
    """How one `unseen` or `paused` clip is made: `first`, then `pause_s` and `rest` if any."""

    clip: Clip
    how: Condition
    first: str
    rest: str = ""
    pause_s: float = 0.0


def unseen() -> list[Script]:
    """Sentence n in conditions n and n + 3 (mod 8): every condition six times."""
    rows = []
    for number, text in enumerate(SENTENCES, 1):
        for which in ((number - 1) % len(CONDITIONS), (number + 2) % len(CONDITIONS)):
            how = CONDITIONS[which]
            rows.append(Script(_clip(f"u{number:02d}-{which}", how, text), how, text))
    return rows


def paused() -> list[Script]:
    rows = []
    for number, (first, rest, pause_s) in enumerate(PAUSED, 1):
        how = CONDITIONS[PAUSED_CONDITIONS[number - 1]]
        clip = _clip(f"p{number}", how, f"{first} {rest}", "paused")
        rows.append(Script(clip, how, first, rest, pause_s))
    return rows


def _clip(name: str, how: Condition, text: str, group: str = "unseen") -> Clip:
    return Clip(name, how.voice, text, condition=how.label, group=group)


def speak(voice: str, text: str, pause_s: float = 0.0, rest: str = "") -> np.ndarray:
    """`text` (then `pause_s` of silence and `rest`) as int16 at 16 kHz."""
    engine, _, name = voice.partition(":")
    if engine == "flite":
        said = _flite(name, text)
        if not rest:
            return said
        gap = np.zeros(round(pause_s * RATE), dtype=np.int16)
        return np.concatenate([said, gap, _flite(name, rest)])
    if engine == "espeak-ng":
        if rest:
            ms = round(pause_s * 1000)
            ssml = f'<speak>{text} <break time="{ms}ms"/> {rest}</speak>'
            argv = ["espeak-ng", "-m", "-v", name, "-w", "/dev/stdout", ssml]
        else:
            argv = ["espeak-ng", "-v", name, "-w", "/dev/stdout", text]
        return _read_wav(subprocess.run(argv, check=True, capture_output=True).stdout)
    raise ValueError(f"unknown voice {voice}")


def _flite(voice: str, text: str) -> np.ndarray:
    argv = ["flite", "-voice", voice, "-t", text, "-o", "/dev/stdout"]
    return _read_wav(subprocess.run(argv, check=True, capture_output=True).stdout)


def render(clip: Clip) -> np.ndarray:
    """A `local` clip's samples as int16 at 16 kHz."""
    if clip.voice == "silence":
        return np.zeros(RATE * 2, dtype=np.int16)
    if clip.voice == "noise":
        rng = np.random.default_rng(15)
        return (rng.normal(0.0, 0.05, RATE * 2) * 32767).astype(np.int16)
    return speak(clip.voice, clip.text)


def condition(samples: np.ndarray, how: Condition, seed: int) -> np.ndarray:
    """The condition's sox effects, then its noise at its SNR (the speech's level is the RMS of
    its frames above -50 dBFS, so leading silence does not lower it)."""
    if how.sox:
        raw = ["-t", "raw", "-r", str(RATE), "-e", "signed", "-b", "16", "-c", "1"]
        argv = ["sox", "-D", *raw, "-", *raw, "-", *how.sox]
        pcm = samples.astype("<i2").tobytes()
        out = subprocess.run(argv, input=pcm, check=True, capture_output=True).stdout
        samples = np.frombuffer(out, dtype="<i2")
    if how.noise is None:
        return samples.astype(np.int16)
    speech = samples.astype(np.float64) / 32768.0
    frames = speech[: len(speech) // 320 * 320].reshape(-1, 320)
    levels = np.sqrt(np.mean(frames * frames, axis=1))
    level = float(np.sqrt(np.mean(levels[levels > 10 ** (-50 / 20)] ** 2)))
    noise = _noise(how.noise, len(speech), seed)
    mixed = speech + noise * level / 10 ** (how.snr_db / 20)
    return np.clip(np.round(mixed * 32768.0), -32768, 32767).astype(np.int16)


def _noise(colour: str, length: int, seed: int) -> np.ndarray:
    """Unit-RMS noise: white, or shaped by 1/sqrt(f) (pink) or 1/f (brown) in the spectrum."""
    noise: np.ndarray = np.random.default_rng(seed).normal(0.0, 1.0, length)
    if colour != "white":
        spectrum = np.fft.rfft(noise)
        f = np.maximum(np.arange(len(spectrum)), 1.0)
        spectrum /= np.sqrt(f) if colour == "pink" else f
        noise = np.fft.irfft(spectrum, n=length)
    scaled: np.ndarray = noise / np.sqrt(np.mean(noise * noise))
    return scaled


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
    clips: list[Clip] = []
    for clip in LOCAL:
        write_wav(HERE / f"{clip.name}.wav", render(clip))
        clips.append(clip)
    for script in unseen() + paused():
        said = speak(script.how.voice, script.first, script.pause_s, script.rest)
        seed = zlib.crc32(script.clip.name.encode())
        write_wav(script.clip.path, condition(said, script.how, seed))
        clips.append(script.clip)
    renders = [c.name for c in clips if c.group == "unseen"]
    pauses = [c.name for c in clips if c.group == "paused"]
    spoken = renders[0::2] + pauses + renders[1::2]
    rows = [
        {"name": c.name, "voice": c.voice, "text": c.text, "condition": c.condition,
         "group": c.group} for c in clips
    ] + [
        {"name": "long-a", "voice": "mixed", "group": "long", "parts": spoken},
        {"name": "long-b", "voice": "mixed", "group": "long", "parts": spoken[::-1]},
    ]  # fmt: skip
    MANIFEST.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(clips)} clips to {HERE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
