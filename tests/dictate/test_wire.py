"""The dictation and voice messages on the wire: the client's verbs decode typed (a bad field is
refused by name), the server's messages encode tagged on `kind` and read back the same."""

from __future__ import annotations

import json

import pytest

from forge.client.frames import decode_frame
from forge.wire.client import DictateOptions, DictateStop, DictateStream, decode_client
from forge.wire.dictate import Axes, DictateEnded, VoiceAudio
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat
from forge.wire.server import JsonFrame

SEAT = Seat("acme", "proj", "a")
KEY = {"org": "acme", "project": "proj", "label": "a"}


def test_a_take_names_its_seat_its_axes_and_its_surface() -> None:
    message = decode_client(json.dumps({
        "kind": "dictate_stream", "key": KEY, "surface": "composer",
        "options": {"styling": "formal"},
    }))  # fmt: skip
    assert message == DictateStream(
        key=SEAT, surface="composer", options=DictateOptions(styling="formal")
    )
    assert decode_client(json.dumps({"kind": "dictate_stop", "key": KEY})) == DictateStop(key=SEAT)


@pytest.mark.parametrize(
    ("message", "why"),
    [
        ({"kind": "dictate_stream", "key": KEY, "options": {"styling": 3}}, "options.styling"),
        ({"kind": "dictate_stop"}, "missing required field `key`"),
        ({"kind": "voice_say", "key": KEY}, "missing required field `text`"),
    ],
)
def test_a_bad_field_is_refused_by_name(message: dict[str, object], why: str) -> None:
    with pytest.raises(ClientRefusal) as refused:
        decode_client(json.dumps(message))
    assert why in refused.value.why


def test_server_messages_are_tagged_on_kind_first_and_read_back() -> None:
    ended = DictateEnded(
        key=SEAT, take=3, surface=None, text="Hi.", raw="hi", audio_ms=900, segments=1,
        options=Axes("semi_formal", "prose", "general"),
    )  # fmt: skip
    text = JsonFrame.encode(ended).text
    assert text.startswith(b'{"kind":"dictate_ended","key":')
    assert decode_frame(text.decode()) == ended
    clip = VoiceAudio.of(SEAT, 1, 22050, b"\x01\x00\xff\xff")
    assert json.loads(JsonFrame.encode(clip).text)["pcm"] == "AQD//w=="
    assert decode_frame(JsonFrame.encode(clip).text.decode()).samples() == b"\x01\x00\xff\xff"  # type: ignore[union-attr]
