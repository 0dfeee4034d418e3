"""The recipe step's transcript: its stdout and stderr, streamed to the attempt's folder.

Each stream goes to `<attempt>/transcript/<stream>.log` while the step runs, redacted as every
other output the attempt keeps (`forge.attempt.redact`) and bounded: the first
`TRANSCRIPT_HEAD_BYTES` are written as they come, the last `TRANSCRIPT_TAIL_BYTES` are held and
written at the end after a line saying how many bytes between them were not kept. Memory stays
bounded by the tail and one held line, whatever the recipe prints.

Redaction needs whole secrets, so text is redacted a line at a time (a private key's block is held
until its end line); a line longer than `HELD_MAX_CHARS` is redacted in pieces.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path
from typing import BinaryIO

from forge.attempt.command import Sink
from forge.attempt.record import TranscriptFiles
from forge.attempt.redact import Redactor

TRANSCRIPT_DIR = "transcript"
STREAMS = ("stdout", "stderr")
TRANSCRIPT_HEAD_BYTES = 1 << 20
"""The first MiB of each stream is kept."""
TRANSCRIPT_TAIL_BYTES = 256 << 10
"""And its last 256 KiB, after the line marking the cut."""
HELD_MAX_CHARS = 64 << 10
"""At most this much text waits for its line's end (or a key block's) before it is redacted."""

_KEY_BEGIN = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")
_KEY_END = re.compile(r"-----END [A-Z ]*PRIVATE KEY-----")


def cut_marker(not_kept: int) -> bytes:
    """The line a cut transcript carries where bytes were left out."""
    return f"\n[forge: {not_kept} bytes of this stream not kept here]\n".encode()


class StreamLog:
    """One stream's bounded, redacted log file, written as chunks arrive."""

    def __init__(self, file: BinaryIO, redactor: Redactor) -> None:
        self._file = file
        self._redactor = redactor
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._held = ""
        self._written = 0
        self._tail = bytearray()
        self.not_kept = 0

    def write(self, chunk: bytes) -> None:
        """Take a chunk of the stream: complete lines are redacted and kept, the rest held."""
        text = self._held + self._decoder.decode(chunk)
        ready = _ready_length(text)
        self._held = text[ready:]
        if ready:
            self._keep(self._redactor.text(text[:ready]).encode())

    def close(self) -> None:
        """Flush what is held, write the kept tail after the cut's marker, close the file."""
        rest = self._held + self._decoder.decode(b"", final=True)
        self._held = ""
        if rest:
            self._keep(self._redactor.text(rest).encode())
        if self.not_kept:
            self._file.write(cut_marker(self.not_kept))
            self._file.write(self._tail)
        self._file.close()

    def _keep(self, data: bytes) -> None:
        room = max(TRANSCRIPT_HEAD_BYTES - self._written, 0)
        if room:
            self._file.write(data[:room])
            self._written += min(room, len(data))
            data = data[room:]
        if not data:
            return
        self._tail += data
        excess = len(self._tail) - TRANSCRIPT_TAIL_BYTES
        if excess > 0:
            del self._tail[:excess]
            self.not_kept += excess


def _ready_length(text: str) -> int:
    """How much of `text` can be redacted now: up to its last line end, but not into a private
    key block still open; everything once that much is held."""
    if len(text) >= HELD_MAX_CHARS:
        return len(text)
    ready = text.rfind("\n") + 1
    begins = list(_KEY_BEGIN.finditer(text, 0, ready))
    if begins and not _KEY_END.search(text, begins[-1].end()):
        return begins[-1].start()
    return ready


class Transcript:
    """The recipe step's two stream logs; every harness run of the attempt appends to them."""

    def __init__(self, attempt_dir: Path, redactor: Redactor) -> None:
        self._dir = attempt_dir / TRANSCRIPT_DIR
        self._redactor = redactor
        self._logs: dict[str, StreamLog] = {}

    def open(self, heading: str | None = None) -> tuple[Sink, Sink]:
        """Where one harness run's stdout and stderr go, the logs opened on the first run;
        `heading` starts a later run's part of each file."""
        if not self._logs:
            self._dir.mkdir(exist_ok=True)
            for stream in STREAMS:
                file = (self._dir / f"{stream}.log").open("wb")
                self._logs[stream] = StreamLog(file, self._redactor)
        elif heading is not None:
            for log in self._logs.values():
                log.write(f"\n[forge: {heading}]\n".encode())
        return self._logs["stdout"].write, self._logs["stderr"].write

    def close(self) -> TranscriptFiles | None:
        """Close both logs; what was written, or None when no harness run opened them."""
        if not self._logs:
            return None
        for log in self._logs.values():
            log.close()
        return TranscriptFiles(
            stdout=f"{TRANSCRIPT_DIR}/stdout.log",
            stderr=f"{TRANSCRIPT_DIR}/stderr.log",
            stdout_not_kept=self._logs["stdout"].not_kept,
            stderr_not_kept=self._logs["stderr"].not_kept,
        )
