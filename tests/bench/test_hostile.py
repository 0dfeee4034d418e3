"""The chaos run's hostile frames (bench/hostile.py), judged by forge's own decoders: no process
but the two that check a seed replays in a fresh interpreter. A frame forge takes would make the
chaos run blame forge for the generator's mistake."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forge.wire.binary import Dropped, Kind, decode_client_binary
from forge.wire.client import KINDS, TOO_DEEP, ClientDecoder, ClientMessage, decode_client
from forge.wire.errors import ClientRefusal

from .scripts import BENCH, load

hostile: Any = load("hostile")
SHAPES: tuple[type[ClientMessage], ...] = hostile.message_types()
TAGS = {hostile.tag_of(shape) for shape in SHAPES}
DECODER = ClientDecoder([shape for shape in SHAPES if hostile.tag_of(shape) not in KINDS])
"""As the supervisor decodes: the client verbs and the ones its areas register (`lab_start`)."""
SEEDS = range(5)


@pytest.fixture(scope="module")
def rounds() -> list[Any]:
    """Five hostile clients' frames: 300 text frames, 50 binary ones."""
    return [hostile.frames(seed) for seed in SEEDS]


def _why(text: str) -> str:
    with pytest.raises(ClientRefusal) as refused:
        DECODER.decode(text)
    assert refused.value.what == "client_message"
    return refused.value.why


def test_the_walk_finds_every_verb_forge_decodes_and_the_lab_verbs() -> None:
    assert KINDS < TAGS
    assert {"lab_start", "lab_stop", "lab_report"} == TAGS - KINDS


def test_every_text_frame_is_refused_where_it_was_made_wrong(rounds: list[Any]) -> None:
    expected = {
        "missing field": "{kind}: ",
        "wrong type": "{kind}: ",
        "padded": "{kind}: ",
        "nested deep": "{kind}: ",
        "cut short": "the message is not valid JSON",
        "not JSON": "the message is not valid JSON",
        "not an object": "a message must be a JSON object tagged with `kind`",
        "no kind": "a message must be a JSON object tagged with a string `kind`",
        "kind not a string": "a message must be a JSON object tagged with a string `kind`",
        "unknown kind": "unknown kind `",
    }
    for texts, _ in rounds:
        for frame in texts:
            why = _why(frame.text)
            if frame.flaw == "nested deep" and why == TOO_DEEP:
                continue  # past the decoder's depth, refused before the flaw is reached
            assert why.startswith(expected[frame.flaw].format(kind=frame.kind)), (frame, why)


def test_every_round_has_each_struct_and_the_rounds_every_flaw(rounds: list[Any]) -> None:
    flaws: Counter[str] = Counter()
    for texts, _ in rounds:
        assert len(texts) == max(hostile.TEXT_FRAMES, len(TAGS))
        assert {frame.kind for frame in texts} >= TAGS
        flaws.update(frame.flaw for frame in texts)
    assert set(flaws) == {
        "missing field", "wrong type", "padded", "nested deep", "cut short", "not JSON",
        "not an object", "no kind", "kind not a string", "unknown kind",
    }  # fmt: skip


def test_every_binary_frame_is_dropped_and_each_kind_byte_is_tried(rounds: list[Any]) -> None:
    leads: set[int | None] = set()
    for _, frames in rounds:
        for frame in frames:
            assert isinstance(decode_client_binary(frame), Dropped), frame[:32]
            leads.add(frame[0] if frame else None)
    assert {None, *Kind} < leads


def test_the_same_seed_draws_the_same_frames_and_another_seed_others(rounds: list[Any]) -> None:
    assert hostile.frames(SEEDS[0]) == rounds[0]
    assert len({repr(frames) for frames in rounds}) == len(rounds)


def test_a_fresh_interpreter_replays_a_seed_whatever_its_hash_seed() -> None:
    """How the chaos run draws: `python -P bench/hostile.py SEED`."""
    outputs = [
        subprocess.run(
            [sys.executable, "-P", str(BENCH / "hostile.py"), "7"],
            capture_output=True, check=True, timeout=120,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        ).stdout
        for hash_seed in ("1", "2")
    ]  # fmt: skip
    assert outputs[0] == outputs[1]
    texts, frames = msgspec.json.decode(outputs[0], type=hostile.Frames)
    assert len(texts) == hostile.TEXT_FRAMES
    assert frames


@st.composite
def _valid_messages(draw: st.DrawFn) -> tuple[type[ClientMessage], dict[str, Any]]:
    shape = draw(st.sampled_from(SHAPES))
    return shape, draw(hostile.valid_object(hostile.struct_info(shape)))


@settings(max_examples=200, deadline=None)
@given(_valid_messages())
def test_the_values_a_flaw_sits_among_are_valid(pair: tuple[type[ClientMessage], Any]) -> None:
    """So a frame wrong "in one place" is wrong only there."""
    shape, message = pair
    assert isinstance(DECODER.decode(msgspec.json.encode(message)), shape)


def test_a_message_nested_a_thousand_deep_is_refused() -> None:
    """msgspec's recursion ends near 990 levels; the decoder refuses what it cannot follow."""
    with pytest.raises(ClientRefusal, match="deeper than the decoder follows"):
        decode_client('{"kind":"ping","x":' + "[" * 1000 + "]" * 1000 + "}")
