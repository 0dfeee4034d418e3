"""Decoding client messages: typed on success, a client_message refusal naming what was wrong."""

from __future__ import annotations

import json

import pytest

from forge.wire.client import (
    KINDS,
    TOO_DEEP,
    BrowserInput,
    Command,
    Ping,
    Press,
    SeatRange,
    Showing,
    Subscribe,
    TerminalView,
    Text,
    decode_client,
)
from forge.wire.errors import ClientRefusal
from forge.wire.seats import Seat, session

SEAT = {"org": "acme", "project": "proj", "label": "lead"}


def refusal(text: str | bytes) -> ClientRefusal:
    with pytest.raises(ClientRefusal) as caught:
        decode_client(text)
    assert caught.value.what == "client_message"
    return caught.value


def test_ping_has_no_fields_and_extra_fields_are_ignored() -> None:
    assert decode_client('{"kind":"ping"}') == Ping()
    assert decode_client('{"kind":"ping","version":30}') == Ping()


def test_subscribe_takes_unit_and_session_subjects() -> None:
    home = decode_client('{"kind":"subscribe","what":"home"}')
    assert home == Subscribe(what="home", answering=False, review=False)
    seat = decode_client(
        json.dumps({"kind": "subscribe", "what": {"session": SEAT}, "answering": True})
    )
    assert seat == Subscribe(what=session(Seat(**SEAT)), answering=True, review=False)


def test_seat_range_reads_from_under_its_wire_name() -> None:
    message = decode_client(
        json.dumps({"kind": "seat_range", "slot": SEAT, "epoch": "e", "from": 2, "to": 4})
    )
    assert isinstance(message, SeatRange)
    assert (message.from_, message.to, message.epoch) == (2, 4, "e")


def test_showing_null_or_absent_is_none() -> None:
    assert decode_client('{"kind":"showing","seat":null}') == Showing(seat=None)
    assert decode_client('{"kind":"showing"}') == Showing(seat=None)


def test_commands_decode_both_variant_shapes() -> None:
    cancel = decode_client(json.dumps({"kind": "command", "command": {"cancel": {"key": SEAT}}}))
    assert isinstance(cancel, Command)
    assert cancel.command == {"cancel": {"key": SEAT}}
    lock = decode_client('{"kind":"command","command":"vault_lock","reply_to":null}')
    assert lock == Command(command="vault_lock", reply_to=None)


def test_terminal_and_browser_verbs_are_typed() -> None:
    view = decode_client(json.dumps({"kind": "terminal_view", "seat": SEAT, "reply_to": 3}))
    assert view == TerminalView(seat=Seat(**SEAT), id=None, reply_to=3)
    press = decode_client(
        json.dumps(
            {
                "kind": "browser_input",
                "seq": 4,
                "event": {"press": {"x": 1.5, "y": 2, "button": "left", "down": True}},
            }
        )
    )
    assert isinstance(press, BrowserInput)
    gesture = press.gesture()
    assert isinstance(gesture, Press)
    assert gesture.x == 1.5


def test_a_gesture_that_is_not_one_is_refused_naming_browser_input() -> None:
    message = decode_client('{"kind":"browser_input","seq":1,"event":{"fly":{}}}')
    assert isinstance(message, BrowserInput)
    with pytest.raises(ClientRefusal) as caught:
        message.gesture()
    assert caught.value.what == "browser_input"
    text = decode_client('{"kind":"browser_input","seq":1,"event":{"text":{"text":"hi"}}}')
    assert isinstance(text, BrowserInput)
    assert text.gesture() == Text(text="hi")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("garbage", "not valid JSON"),
        ("1\x86", "not valid JSON"),  # a typed decode stops at the number, before the rest
        ('{"kind":"ping"} x', "not valid JSON"),
        ("[1, 2]", "JSON object tagged with `kind`"),
        ("7", "JSON object tagged with `kind`"),
        ("{}", "string `kind`"),
        ('{"kind":7}', "string `kind`"),
        ('{"kind":"settings"}', "unknown kind `settings`"),
        ('{"kind":"browser_profile_close"}', "unknown kind `browser_profile_close`"),
        ('{"kind":"subscribe"}', "subscribe: object missing required field `what`"),
        ('{"kind":"subscribe","what":"nowhere"}', "subscribe: `what`"),
        ('{"kind":"subscribe","what":{"session":{"org":"a"}}}', "`what.session`"),
        ('{"kind":"command","command":"vault_lock","reply_to":true}', "`reply_to`"),
        ('{"kind":"seat_range","slot":null,"epoch":"e","from":1,"to":1}', "`slot`"),
    ],
)
def test_a_bad_message_names_what_was_wrong(text: str, why: str) -> None:
    assert why in refusal(text).why


def test_every_kind_in_the_contract_is_known() -> None:
    contract = {
        "ping", "subscribe", "unsubscribe", "showing", "seat_range", "command",
        "terminal_view", "terminal_detach", "terminal_resize", "terminal_pause", "terminal_ack",
        "terminal_control", "terminal_close", "browser_view", "browser_view_page",
        "browser_detach", "browser_resize", "browser_input", "browser_control", "browser_nav",
        "browser_file_answer", "browser_tabs", "browser_open", "browser_navigate",
        "browser_dialog_answer", "browser_audio", "more",
        "document_read", "dictate_stream", "file_content", "voice_mode", "client_perf",
        "settings_edit", "dictate_stop", "dictate_cancel", "voice_preview", "voice_say",
        "dictate_bench", "document_list",
    }  # fmt: skip
    assert contract == KINDS


@pytest.mark.parametrize("kind", ["more", "no_such_kind"])
def test_a_wrong_message_nested_near_the_decoders_limit_is_refused_at_every_depth(
    kind: str,
) -> None:
    # A wrong message is decoded a second time to name what was wrong, one call deeper: at a
    # depth the first decode follows and the second does not, RecursionError escaped and the
    # supervisor closed the connection. Every depth around the limit, wherever it falls.
    for depth in range(1, 1200):
        text = '{"_nesting":' + "[" * depth + "]" * depth + f',"kind":"{kind}"}}'
        why = refusal(text).why
        assert why == TOO_DEEP or why.startswith(("more: ", "unknown kind")), (depth, why)
