"""The sound decisions without a browser: the silence gate, who plays, who hears a frame."""

from __future__ import annotations

import json
import struct

import pytest

from forge.workers.browser.sound import (
    FRAME_BYTES,
    HOLD_FRAMES,
    SILENT_PEAK,
    Audibility,
    SilenceGate,
    louder_than,
    peak,
    route,
)


def frame(level: int) -> bytes:
    """A frame whose loudest sample is `level` (one sample, negative, the rest zero)."""
    samples = [0] * (FRAME_BYTES // 2)
    samples[7] = -level
    return struct.pack(f"<{len(samples)}h", *samples)


def test_a_frame_is_as_loud_as_its_loudest_sample_either_sign() -> None:
    assert FRAME_BYTES == 3840  # 20 ms of 48 kHz stereo i16
    assert peak(bytes(FRAME_BYTES)) == 0
    assert peak(frame(1000)) == 1000
    assert peak(struct.pack("<2h", 5, 32767)) == 32767
    assert peak(struct.pack("<h", -32768)) == 32768


@pytest.mark.parametrize("level", [0, 1, 15, 16, 17, 100, 255, 256, 257, 1000, 32767, 32768])
def test_the_cheap_loudness_test_agrees_with_the_peak(level: int) -> None:
    for threshold in (0, SILENT_PEAK, 200):
        assert louder_than(frame(level), threshold) == (peak(frame(level)) > threshold)
        assert louder_than(frame(level)[:64], threshold) == (level > threshold)


def test_silence_is_never_sent_and_a_tail_is_held() -> None:
    gate = SilenceGate()
    assert not gate.passes(bytes(FRAME_BYTES))
    assert not gate.passes(frame(SILENT_PEAK))  # at the threshold: still silence
    assert gate.passes(frame(SILENT_PEAK + 1))
    held = [gate.passes(bytes(FRAME_BYTES)) for _ in range(HOLD_FRAMES + 3)]
    assert held == [True] * HOLD_FRAMES + [False] * 3
    assert gate.passes(frame(5000))  # sound again opens it at once


def context(context_id: str, state: str, kind: str = "realtime") -> dict[str, object]:
    return {"context": {"contextId": context_id, "contextType": kind, "contextState": state}}


def media(player: str, *names: str) -> dict[str, object]:
    events = [{"timestamp": 1.0, "value": json.dumps({"event": name})} for name in names]
    return {"playerId": player, "events": events}


def test_a_running_realtime_context_plays_until_suspended_or_destroyed() -> None:
    heard = Audibility()
    heard.event(1, "WebAudio.contextCreated", context("a", "suspended"))
    assert heard.playing == set()
    heard.event(1, "WebAudio.contextChanged", context("a", "running"))
    heard.event(2, "WebAudio.contextCreated", context("b", "running", kind="offline"))
    assert heard.playing == {1}
    heard.event(1, "WebAudio.contextChanged", context("a", "suspended"))
    assert heard.playing == set()
    heard.event(1, "WebAudio.contextChanged", context("a", "running"))
    heard.event(1, "WebAudio.contextWillBeDestroyed", {"contextId": "a"})
    assert heard.playing == set()


def test_a_media_element_plays_from_play_to_pause_or_end() -> None:
    heard = Audibility()
    heard.event(3, "Media.playerEventsAdded", media("p", "kWebMediaPlayerCreated", "kLoad"))
    assert heard.playing == set()
    heard.event(3, "Media.playerEventsAdded", media("p", "kPlay"))
    assert heard.playing == {3}
    heard.event(3, "Media.playerEventsAdded", media("p", "kPlay", "kPause"))
    assert heard.playing == set()
    heard.event(3, "Media.playerEventsAdded", media("p", "kPlay", "kEnded"))
    assert heard.playing == set()
    heard.event(3, "Media.playerEventsAdded", {"playerId": "p", "events": [{"value": "not json"}]})
    heard.event(3, "Media.playerEventsAdded", media("p", "kPlay"))
    heard.forget(3)
    assert heard.playing == set()


@pytest.mark.parametrize(
    ("playing", "listened", "heard_by"),
    [
        ({1}, {1, 2}, [1]),  # Chromium says tab 1 plays: only its listeners hear it
        ({3}, {1, 2}, []),  # an unlistened tab plays: nobody hears another tab's sound
        (set(), {2, 1}, [1, 2]),  # nothing reported: every listened tab (the viewed tab)
        ({1, 2}, {1, 2}, [1, 2]),  # one sink per profile: two playing tabs share the mix
        (set(), set(), []),
    ],
)
def test_a_frame_goes_to_the_listened_tabs_chromium_says_play(
    playing: set[int], listened: set[int], heard_by: list[int]
) -> None:
    assert route(playing, listened) == heard_by
