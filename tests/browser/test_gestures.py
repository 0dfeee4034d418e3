"""Gestures from the wire (O-BR1) into CDP input, and the one-in-flight pointer stream."""

from __future__ import annotations

import pytest

from forge.workers.browser.gestures import (
    GestureInvalid,
    Key,
    Mods,
    Move,
    PointerStream,
    Press,
    Text,
    Wheel,
    is_discrete,
    parse_gesture,
    record_fields,
    to_cdp,
)


def test_press_becomes_a_mouse_press_with_modifiers() -> None:
    gesture = parse_gesture(
        {
            "press": {
                "x": 10,
                "y": 20.5,
                "button": 0,
                "down": True,
                "clicks": 2,
                "mods": {"shift": True},
            }
        }
    )
    assert gesture == Press(10.0, 20.5, "left", True, 2, Mods(shift=True))
    ((method, params),) = to_cdp(gesture, touch=False)
    assert method == "Input.dispatchMouseEvent"
    assert params["type"] == "mousePressed"
    assert (params["button"], params["buttons"], params["clickCount"], params["modifiers"]) == (
        "left", 1, 2, 8,
    )  # fmt: skip


def test_press_on_a_touch_viewport_is_a_touch() -> None:
    down = to_cdp(Press(5, 6, "left", True, 1, Mods()), touch=True)
    up = to_cdp(Press(5, 6, "left", False, 1, Mods()), touch=True)
    assert down == [
        ("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": 5, "y": 6}]})
    ]
    assert up == [("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})]
    assert to_cdp(Move(1, 2, 0, Mods()), touch=True) == []


def test_keys_carry_text_only_when_they_type() -> None:
    ((_, letter),) = to_cdp(Key("a", "KeyA", True, Mods()), touch=False)
    ((_, enter),) = to_cdp(Key("Enter", "Enter", True, Mods()), touch=False)
    ((_, copy),) = to_cdp(Key("c", "KeyC", True, Mods(ctrl=True)), touch=False)
    ((_, back),) = to_cdp(Key("Backspace", "Backspace", False, Mods()), touch=False)
    assert (letter["type"], letter["text"], letter["windowsVirtualKeyCode"]) == ("keyDown", "a", 65)
    assert (enter["text"], enter["windowsVirtualKeyCode"]) == ("\r", 13)
    assert copy["type"] == "rawKeyDown"
    assert "text" not in copy
    assert (back["type"], back["windowsVirtualKeyCode"]) == ("keyUp", 8)


def test_text_is_inserted_and_recorded_by_count_only() -> None:
    gesture = parse_gesture({"text": {"text": "hunter2"}})
    assert to_cdp(gesture, touch=False) == [("Input.insertText", {"text": "hunter2"})]
    assert record_fields(gesture) == {"gesture": "text", "chars": 7}
    assert is_discrete(gesture)
    assert not is_discrete(Move(0, 0, 0, Mods()))


@pytest.mark.parametrize(
    ("event", "words"),
    [
        ({"press": {"x": 1}}, "press.y"),
        ({"press": {"x": 1, "y": 2, "button": 7}}, "press.button"),
        ({"move": {"x": float("nan"), "y": 1}}, "move.x"),
        ({"key": {"key": ""}}, "key.key"),
        ({"text": {"text": 5}}, "text.text"),
        ({"fly": {}}, "unknown input event"),
        ({"press": {}, "move": {}}, "one key"),
        ("press", "one key"),
    ],
)
def test_malformed_gestures_are_refused_in_words(event: object, words: str) -> None:
    with pytest.raises(GestureInvalid, match=words):
        parse_gesture(event)


def test_pointer_stream_keeps_one_in_flight_and_the_newest_waiting() -> None:
    stream = PointerStream()
    assert stream.offer(Move(1, 1, 0, Mods()))
    assert not stream.offer(Move(2, 2, 0, Mods()))
    assert not stream.offer(Move(3, 3, 0, Mods()))
    assert stream.landed() == Move(3, 3, 0, Mods())
    assert stream.in_flight
    assert stream.landed() is None
    assert not stream.in_flight


def test_waiting_wheels_add_up_and_land_before_a_press() -> None:
    stream = PointerStream()
    assert stream.offer(Wheel(0, 0, 0, 10, Mods()))
    stream.offer(Wheel(0, 0, 1, 20, Mods()))
    stream.offer(Wheel(0, 0, 2, 30, Mods()))
    assert stream.before_discrete() == Wheel(0, 0, 3, 50, Mods())
    stream.offer(Move(1, 1, 0, Mods()))
    assert stream.before_discrete() is None
    stream.reset()
    assert stream.offer(Move(1, 1, 0, Mods()))


def test_text_mods_are_parsed_too() -> None:
    assert parse_gesture({"text": {"text": "x", "mods": {"alt": 1}}}) == Text("x", Mods(alt=True))
