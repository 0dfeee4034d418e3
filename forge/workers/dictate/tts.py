"""Speech out: a line of text rendered to mono i16 PCM by a local engine, in a subprocess.

espeak-ng is the default: deterministic, installed by `.ci/run`, first audio in ~10 ms. Piper
runs only when `[tts] engine = "piper"` names it, with the `.onnx` voice in `[tts] piper_model`
(its `.onnx.json` gives the sample rate). Nothing is downloaded; an engine that is not on PATH is
a sentence, not a crash.

The line is data, never the engine's options or markup: it reaches espeak-ng on stdin
(`--stdin`, without `-m`, so no SSML) and Piper on stdin, never in argv, where a line starting
with a dash would be read as an option (`-f<path>` speaks a file) and every local user could read
it in the process list. `speakable` turns what the engines would still read as commands into
spaces: control characters (NUL ends espeak-ng's text, ctrl-A starts its embedded commands) and
the `[[` that opens espeak-ng's phoneme input. A voice names an installed voice, never a path:
espeak-ng reads `-v ../<file>` as a voice file and prints its lines in its errors.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import struct
import time
from dataclasses import dataclass
from pathlib import Path

from forge import eventloop

ESPEAK = "espeak-ng"
PIPER = "piper"
PREVIEW_LINE = "This is how this seat will sound when it speaks to you."

_COMMANDS = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]|\[(?=\[)")
"""Control characters (C0, DEL, C1), lone surrogates, and each `[` that opens a `[[`."""
_VOICE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+()-]{0,63}")
"""An engine voice id as espeak-ng lists them (en-us, en-gb-x-rp, en-us+f3): no path."""


def speakable(text: str) -> str:
    """`text` with what an engine would read as a command turned into spaces (the words kept):
    a control character or lone surrogate is one space, `[[` becomes `[ [`."""
    return _COMMANDS.sub(lambda found: "[ " if found.group() == "[" else " ", text)


def check_voice(voice: str) -> None:
    """Raise `SpeechFailed` unless `voice` reads as a voice id (a name, not a file's path)."""
    if not _VOICE.fullmatch(voice):
        raise SpeechFailed(
            f"{voice!r} is not a voice id: letters, digits and - + _ ( ), as espeak-ng "
            "--voices lists them (en-us, en-gb)"
        )


class SpeechFailed(Exception):
    """The engine could not render the line; the message is the engine's or forge's words."""


@dataclass(frozen=True, slots=True)
class Rendered:
    sample_rate: int
    pcm: bytes
    first_audio_s: float
    """From the call to the first sample read back."""
    render_s: float


@dataclass(frozen=True, slots=True)
class Speaker:
    """One configured engine: `espeak-ng` (voice: an espeak-ng voice id) or `piper`."""

    engine: str = ESPEAK
    voice: str | None = None
    piper_model: str | None = None

    @property
    def model_name(self) -> str:
        return Path(self.piper_model).stem if self.engine == PIPER and self.piper_model else ESPEAK

    async def render(self, text: str, voice: str | None = None) -> Rendered:
        line = speakable(text)
        if not line.strip():
            raise SpeechFailed("there is nothing to say")
        if self.engine == PIPER:
            return await self._piper(line)
        return await self._espeak(line, voice or self.voice)

    async def _espeak(self, text: str, voice: str | None) -> Rendered:
        if voice is not None:
            check_voice(voice)
        argv = [ESPEAK, "--stdout", "--stdin", *(["-v", voice] if voice else [])]
        started = time.perf_counter()
        data, first = await _run(argv, text.encode(), started)
        rate, pcm = _wav_body(data)
        return Rendered(rate, pcm, first, time.perf_counter() - started)

    async def _piper(self, text: str) -> Rendered:
        if not self.piper_model:
            raise SpeechFailed('[tts] engine = "piper" needs [tts] piper_model (an .onnx voice)')
        config = Path(self.piper_model + ".json")
        try:
            text_config = await asyncio.to_thread(config.read_text, encoding="utf-8")
            rate = int(json.loads(text_config)["audio"]["sample_rate"])
        except (OSError, ValueError, KeyError) as error:
            raise SpeechFailed(
                f"cannot read the voice's sample rate from {config}: {error}"
            ) from None
        started = time.perf_counter()
        argv = [PIPER, "--model", self.piper_model, "--output_raw"]
        pcm, first = await _run(argv, text.encode(), started)
        return Rendered(rate, pcm[: len(pcm) - len(pcm) % 2], first, time.perf_counter() - started)

    async def voices(self) -> list[str]:
        """The installed voice ids: espeak-ng's languages, or the one configured Piper voice."""
        if self.engine == PIPER:
            return [self.model_name] if self.piper_model else []
        if shutil.which(ESPEAK) is None:
            return []
        data, _ = await _run([ESPEAK, "--voices"], None, time.perf_counter())
        rows = data.decode(errors="replace").splitlines()[1:]
        return sorted({row.split()[1] for row in rows if len(row.split()) > 1})


async def _run(argv: list[str], stdin: bytes | None, started: float) -> tuple[bytes, float]:
    """Run the engine; its stdout and when its first bytes came. Raises `SpeechFailed`."""
    if shutil.which(argv[0]) is None:
        raise SpeechFailed(f"{argv[0]} is not installed (not on PATH)")
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    if stdin is not None:
        assert process.stdin is not None
        eventloop.write_to_pipe(process.stdin, stdin)  # one that died says so on stderr
        process.stdin.close()
    chunks = [await process.stdout.read(65536)]
    first = time.perf_counter() - started
    while chunk := await process.stdout.read(65536):
        chunks.append(chunk)
    errors = await process.stderr.read()
    if await process.wait() != 0:
        words = errors.decode(errors="replace").strip().splitlines()
        raise SpeechFailed(f"{argv[0]} failed: {words[-1] if words else 'no message'}")
    return b"".join(chunks), first


def _wav_body(data: bytes) -> tuple[int, bytes]:
    """A piped WAV's sample rate and samples (its length fields are not filled in a pipe)."""
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise SpeechFailed("espeak-ng did not write a WAV")
    offset, rate = 12, 0
    while offset + 8 <= len(data):
        chunk, size = data[offset : offset + 4], struct.unpack_from("<I", data, offset + 4)[0]
        if chunk == b"fmt ":
            rate = struct.unpack_from("<I", data, offset + 12)[0]
        if chunk == b"data":
            body = data[offset + 8 :]
            return rate, body[: len(body) - len(body) % 2]
        offset += 8 + size
    raise SpeechFailed("espeak-ng wrote a WAV with no samples")
