"""Which stretch of a take Whisper reads next, and which of its words are final. Pure.

A take is read as faster-whisper reads a long file in its long-form mode, but as the audio
arrives. A window starts where the take's final words end (`seek`), or later where a voice next
spoke (audio no voice spoke in is not read), and is at most 30 s long:

- `commit`: once 30 s past the window's start have arrived, the window is read (with timestamps,
  prompted with the tokens of the take's final words, as long-form mode conditions on the text
  before), and the segments Whisper finished in it are final. The next window starts where the
  last of them ends: the sentence the window's edge cut off is read again, whole, at the head of
  the next, so long speech is cut where Whisper itself ends a segment (a pause between phrases)
  and no word at a cut is lost or doubled.
- `ahead`: while the window is shorter, it is read again each time a pause closes a segment of
  it, from its start to that segment's end. The words are shown, not final: a pause is not a
  sentence's end, and "open the editor and ... change the font size" is read as one sentence once
  its second half is heard, not as two fragments.
- `final`: when the take has ended, what is left is read once, from the window's start to the end
  of the take's audio (at most a window): the floor reads the whole clip, and tiny.en reads the
  same voice differently for 50 ms less of the noise after it ("Then good file" where the whole
  clip has "The input file"). Not at all when the last `ahead` read already reached the last
  voice: a person who pauses before stopping waits on nothing.

A read a take's other reads supersede before it starts is skipped: only `next()` as it stands
is read. The take's words depend only on its audio: `ahead` reads never feed a prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

WINDOW_MS = 30_000
"""Whisper's window."""
PROMPT_TOKENS = 223
"""Whisper reads at most this many tokens of the text before (faster-whisper's own cut)."""
TAIL_MS = 400
"""A segment that ends less than this past `seek` was read whole: its last 300 ms are the
endpointer's margin after the last voiced frame, so what is left of it is no voice."""


class Kind(StrEnum):
    AHEAD = "ahead"
    COMMIT = "commit"
    FINAL = "final"


@dataclass(frozen=True, slots=True)
class Read:
    kind: Kind
    start_ms: int
    end_ms: int
    prompt: tuple[int, ...]
    """The tokens of the take's final words before `start_ms`."""


@dataclass(frozen=True, slots=True)
class Heard:
    """What a read heard: its words, their tokens, and (a `commit`) where its finished segments
    end, in ms into the read (None when it finished none)."""

    text: str
    tokens: tuple[int, ...] = ()
    finished_ms: int | None = None


class Windows:
    def __init__(self) -> None:
        self.seek_ms = 0
        """The take's words before this are final."""
        self._final: list[str] = []
        self._tokens: list[int] = []
        self._spoken: list[tuple[int, int | None]] = []
        """Where a voice spoke since `seek_ms`: (start, end), end None while it speaks."""
        self._heard_ms = 0
        self._ended = False
        self._latest: tuple[Read, str] | None = None
        """The current window's last `ahead` or `final` read and its words."""

    # What the take tells.

    def opened(self, start_ms: int) -> None:
        """A voice started speaking at `start_ms`."""
        self._spoken.append((start_ms, None))

    def closed(self, start_ms: int, end_ms: int) -> None:
        """The segment that opened at `start_ms` closed at `end_ms`."""
        if self._spoken and self._spoken[-1] == (start_ms, None):
            self._spoken[-1] = (start_ms, end_ms)
        else:
            self._spoken.append((start_ms, end_ms))

    def heard(self, ms: int) -> None:
        """The take's audio has arrived up to `ms`."""
        self._heard_ms = ms

    def end(self) -> None:
        """The take was stopped (after its last segment closed)."""
        self._ended = True

    # What to read, and what it heard.

    def next(self) -> Read | None:
        """The read to run now, None when there is none (yet, or any more once `done`)."""
        start = self.window_ms
        if start is None:
            return None
        prompt = tuple(self._tokens[-PROMPT_TOKENS:])
        last = self._last_end()
        reach = (last or start) if self._ended else self._heard_ms
        if reach - start > WINDOW_MS or (not self._ended and reach - start == WINDOW_MS):
            return Read(Kind.COMMIT, start, start + WINDOW_MS, prompt)
        if last is None or last <= start:
            return None
        if self._latest is not None and _reached(self._latest[0], start, last, prompt):
            return None
        if self._ended:
            end = max(last, min(self._heard_ms, start + WINDOW_MS))
            return Read(Kind.FINAL, start, end, prompt)
        return Read(Kind.AHEAD, start, last, prompt)

    def done(self, read: Read, heard: Heard) -> None:
        """`read` (the last `next()`) heard `heard`."""
        if read.kind is not Kind.COMMIT:
            self._latest = (read, heard.text)
            return
        self._final.append(heard.text)
        self._tokens.extend(heard.tokens)
        finished = heard.finished_ms if heard.finished_ms else WINDOW_MS
        self.seek_ms = read.start_ms + finished
        self._spoken = [(s, e) for s, e in self._spoken if e is None or e >= self.seek_ms + TAIL_MS]
        self._latest = None

    # What the take reads back.

    @property
    def window_ms(self) -> int | None:
        """Where the current window starts: `seek_ms`, or where a voice next spoke after it;
        None when no voice has spoken since."""
        if not self._spoken:
            return None
        return max(self.seek_ms, self._spoken[0][0])

    @property
    def done_reading(self) -> bool:
        """The take ended and every read it needs has been heard."""
        return self._ended and self.next() is None

    def text(self) -> str:
        """The take's words so far: the final ones, then the latest read of the open window."""
        latest = self._latest[1] if self._latest is not None else ""
        return " ".join(t for t in (self.final(), latest) if t)

    def final(self) -> str:
        """The take's final words."""
        return " ".join(t for t in self._final if t)

    def prompt(self) -> tuple[int, ...]:
        return tuple(self._tokens[-PROMPT_TOKENS:])

    def needed_from_ms(self, preroll_ms: int) -> int:
        """No read will start before this: where the window starts, or (no voice since `seek`)
        `preroll_ms` before the audio heard so far."""
        start = self.window_ms
        if start is not None:
            return start
        return max(self.seek_ms, self._heard_ms - preroll_ms)

    def _last_end(self) -> int | None:
        ends = [e for _, e in self._spoken if e is not None]
        return max(ends) if ends else None


def _reached(latest: Read, start_ms: int, last_ms: int, prompt: tuple[int, ...]) -> bool:
    """`latest` read the window as it stands: from its start, with its prompt, past its last
    voice."""
    return (latest.start_ms, latest.prompt) == (start_ms, prompt) and latest.end_ms >= last_ms
