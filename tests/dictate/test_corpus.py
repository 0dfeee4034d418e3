"""The committed corpus: every clip's WAV is what the manifest and make.py say, the long takes are
the unseen and paused clips end to end, and the bench's default set is the unseen speech."""

from __future__ import annotations

from forge.workers.dictate import bench, corpus
from forge.workers.dictate.audio import seconds
from forge.workers.dictate.corpus import make


def test_the_manifest_is_what_make_py_writes_and_every_wav_reads() -> None:
    clips = corpus.load()
    scripted = [script.clip for script in make.unseen() + make.paused()]
    stored = [clip for clip in clips if clip.group in ("unseen", "paused")]
    assert [(c.name, c.voice, c.text, c.condition) for c in stored] == [
        (c.name, c.voice, c.text, c.condition) for c in scripted
    ]
    assert [c.name for c in clips if c.group == "local"] == [c.name for c in make.LOCAL]
    conditions = {(c.voice, c.condition) for c in stored if c.group == "unseen"}
    assert len(conditions) == len(make.CONDITIONS) == 8
    for clip in clips:
        if clip.group != "long":
            assert len(clip.samples()) > 16000, clip.name


def test_the_long_takes_are_every_unseen_and_paused_clip_once() -> None:
    long_a, long_b = corpus.named("long-a", "long-b")
    spoken = {c.name for c in corpus.load() if c.group in ("unseen", "paused")}
    assert sorted(p.name for p in long_a.parts) == sorted(spoken)
    assert long_b.parts == long_a.parts[::-1]
    assert 180 < seconds(long_a.samples()) < 220
    assert long_a.text == " ".join(part.text for part in long_a.parts)


def test_the_bench_runs_the_unseen_speech_silence_noise_and_one_long_take() -> None:
    default = bench.chosen([])
    assert {c.group for c in default} == {"unseen", "paused", "local", "long"}
    assert [c.name for c in default if c.group in ("local", "long")] == [
        "silence",
        "noise",
        "long-a",
    ]
    assert [c.name for c in bench.chosen(["flite-6", "long-b"])] == ["flite-6", "long-b"]
    assert bench.chosen(["no-such-clip"]) == []
