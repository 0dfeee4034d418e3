"""The dictate worker's protocol: takes in, words and levels out, speech rendered on demand.

A take is `Begin` (the model is loaded, the take's state made), its audio on the bulk stream
`audio_stream(take)` (the client's kind-0 samples as they came), then `Finish` (decode what is
open, answer the shaped words) or `Cancel` (drop it, nothing lands). `Finish` names how many audio
frames the supervisor sent, because the bulk and control channels are separate sockets: the
worker reads the stream up to that frame before it closes the take. Levels, phases and partial
words come back as events while the take runs. `Say` renders a line of speech (the PCM rides the
answer as a payload frame); `Status` and `Bench` are the `dictate_models` subject's reads.
"""

from __future__ import annotations

import msgspec

from forge.ipc.policy import LifecycleTimings
from forge.ipc.protocol import WorkerEvent, WorkerProtocol, WorkerRequest
from forge.wire.dictate import Axes as Axes

AUDIO_STREAM = "take:"
"""Supervisor -> worker: one bulk stream per take, `take:<id>`, each frame i16 samples with its
number (1, 2, ...) as meta: the supervisor re-offers a frame the full socket refused, so the
stream's own seq counts offers, not frames."""


def audio_stream(take: int) -> str:
    return f"{AUDIO_STREAM}{take}"


class ModelState(msgspec.Struct, frozen=True, kw_only=True):
    """The dictation model's preflight: pending, verifying, loading, ready or failed."""

    state: str
    name: str | None = None
    path: str | None = None
    size: int | None = None
    sha256: str | None = None
    origin: str | None = None
    """Where the choice came from: `[dictate] models_dir` or `the compiled pin`."""
    at_ms: int | None = None
    """When it reached this state."""
    error: str | None = None
    facts: dict[str, str] | None = None
    """What the pin declares about the checkpoint: quant, parameters, licence, runtime."""


class SpeakingState(msgspec.Struct, frozen=True, kw_only=True):
    """The speaking engine: its model name, the voices installed, the configured voice."""

    engine: str
    model: str
    voices: list[str]
    voice: str | None
    state: str
    """`ready` when the engine is on PATH (and the Piper voice readable), else `pending`."""
    error: str | None = None


class Began(msgspec.Struct, frozen=True):
    model: str


class Begin(WorkerRequest[Began], tag="begin", frozen=True):
    take: int
    axes: Axes


class Finished(msgspec.Struct, frozen=True, kw_only=True):
    text: str
    """The words, shaped by the take's axes."""
    raw: str
    """The engine's words, segments joined, unshaped."""
    audio_ms: int
    segments: int
    last_decode_ms: int
    """How long the open segment's decode took (the end of the take waited on it)."""


class Finish(WorkerRequest[Finished], tag="finish", frozen=True):
    take: int
    frames: int
    """Audio frames the supervisor sent on the take's stream (the worker reads up to there)."""


class Cancel(WorkerRequest[None], tag="cancel", frozen=True):
    take: int


class Status(msgspec.Struct, frozen=True, kw_only=True):
    model: ModelState
    speaking: SpeakingState
    takes: list[int]
    """The takes the worker holds state for."""


class GetStatus(WorkerRequest[Status], tag="status", frozen=True):
    pass


class Spoken(msgspec.Struct, frozen=True, kw_only=True):
    """A rendered line; its i16 mono PCM is the answer's payload frame."""

    sample_rate: int
    first_audio_ms: float
    render_ms: float


class Say(WorkerRequest[Spoken], tag="say", frozen=True):
    text: str
    voice: str | None = None


class ClipResult(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    voice: str
    said: str
    floor: str
    """What the engine heard on the whole clip in one call (a long take: faster-whisper's own
    long-form mode)."""
    streamed: str
    """What a take heard, the clip pushed through it in real time."""
    audio_s: float
    floor_s: float
    end_of_take_s: float
    last_read_floor_s: float | None = None
    """The floor's decode of the audio the take's last read covered (the end of the take waited
    on that read); None when the take read nothing."""
    condition: str = "clean"
    group: str = "local"


class BenchRun(msgspec.Struct, frozen=True, kw_only=True):
    """One `forge dictate bench` run over the committed corpus (see `dictate_models.results`):
    each clip streamed through a take in real time beside the floor on the whole clip. WER, RTF
    and the end of take are of the clips that are not long takes; those have their own row."""

    model: str
    clips: int
    audio_s: float
    corpus_digest: str
    wer: float
    floor_wer: float
    rtf: float
    """Decode seconds per audio second, whole-clip calls."""
    end_of_take_p50_s: float
    end_of_take_p95_s: float
    first_partial_s: float | None
    peak_rss_bytes: int
    rows: list[ClipResult]
    end_ratio_p50: float | None = None
    """The end of a take over the floor's decode of the audio its last read covered, the
    median."""
    long_wer: float | None = None
    """The long takes' WER, streamed (None when none ran)..."""
    long_form_wer: float | None = None
    """...and faster-whisper's long-form mode on the same audio."""
    long_end_ratios: list[float] = msgspec.field(default_factory=list)
    """Each long take's end over the floor's decode of the audio its last read covered."""
    load_before: float | None = None
    load_after: float | None = None
    """The machine's one-minute load average as the run began and ended."""


class SpeakingRun(msgspec.Struct, frozen=True, kw_only=True):
    """The speaking loop: each corpus line rendered, then heard back by the dictation model."""

    model: str
    clips: int
    round_trip_wer: float
    first_audio_ms_p50: float
    rtf: float
    peak_rss_bytes: int


class Benched(msgspec.Struct, frozen=True, kw_only=True):
    dictation: BenchRun
    speaking: SpeakingRun | None


class Bench(WorkerRequest[Benched], tag="bench", frozen=True):
    speaking: bool = True
    clips: list[str] = msgspec.field(default_factory=list)
    """The corpus clips to run, by name; empty runs the bench's own set (`bench.DEFAULT`)."""


class TakeLevel(WorkerEvent, tag="take_level", frozen=True):
    take: int
    rms: float


class TakePhase(WorkerEvent, tag="take_phase", frozen=True):
    take: int
    phase: str


class TakePartial(WorkerEvent, tag="take_partial", frozen=True):
    take: int
    text: str


class TakeFailed(WorkerEvent, tag="take_failed", frozen=True):
    take: int
    why: str


class Preflight(WorkerEvent, tag="preflight", frozen=True):
    """The model's state moved (loading, ready, failed)."""

    model: ModelState


DICTATE = WorkerProtocol(
    kind="dictate",
    module="forge.workers.dictate",
    requests=(Begin, Finish, Cancel, GetStatus, Say, Bench),
    events=(TakeLevel, TakePhase, TakePartial, TakeFailed, Preflight),
    streams=(AUDIO_STREAM,),
    timings=LifecycleTimings(hello_timeout=30.0),
)
