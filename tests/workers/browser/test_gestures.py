"""Gestures from the wire (O-BR1) into CDP input, and the one-in-flight pointer stream."""

from __future__ import annotations

import pytest

from forge.wire.client import Key, Modifiers, Move, Press, Text, Wheel, is_discrete, record_fields
from forge.wire.errors import ClientRefusal
from forge.workers.browser.gestures import GestureInvalid, PointerStream, decode_gesture, to_cdp


def test_press_becomes_a_mouse_press_with_modifiers() -> None:
    gesture = decode_gesture(
        {
            "press": {
                "x": 10,
                "y": 20.5,
                "button": "0",
                "down": True,
                "clicks": 2,
                "mods": {"shift": True},
            }
        }
    )
    assert gesture == Press(10.0, 20.5, "0", True, 2, Modifiers(shift=True))
    ((method, params),) = to_cdp(gesture, touch=False)
    assert method == "Input.dispatchMouseEvent"
    assert params["type"] == "mousePressed"
    assert (params["button"], params["buttons"], params["clickCount"], params["modifiers"]) == (
        "left", 1, 2, 8,
    )  # fmt: skip


def test_press_on_a_touch_viewport_is_a_touch() -> None:
    down = to_cdp(Press(5, 6, "left", True), touch=True)
    up = to_cdp(Press(5, 6, "left", False), touch=True)
    assert down == [
        ("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": 5, "y": 6}]})
    ]
    assert up == [("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})]
    assert to_cdp(Move(1, 2, 0), touch=True) == []
    ((_, drag),) = to_cdp(Move(1, 2, 1), touch=True)
    assert drag["type"] == "touchMove"


def test_keys_carry_text_only_when_they_type() -> None:
    ((_, letter),) = to_cdp(Key("a", "KeyA", True), touch=False)
    ((_, enter),) = to_cdp(Key("Enter", "Enter", True), touch=False)
    ((_, copy),) = to_cdp(Key("c", "KeyC", True, Modifiers(ctrl=True)), touch=False)
    ((_, back),) = to_cdp(Key("Backspace", "Backspace", False), touch=False)
    assert (letter["type"], letter["text"], letter["windowsVirtualKeyCode"]) == ("keyDown", "a", 65)
    assert (enter["text"], enter["windowsVirtualKeyCode"]) == ("\r", 13)
    assert copy["type"] == "rawKeyDown"
    assert "text" not in copy
    assert (back["type"], back["windowsVirtualKeyCode"]) == ("keyUp", 8)


def test_moves_and_wheels_become_mouse_events() -> None:
    ((_, move),) = to_cdp(Move(3, 4, 1), touch=False)
    ((_, wheel),) = to_cdp(Wheel(3, 4, 0, 120), touch=False)
    assert (move["type"], move["button"], move["buttons"]) == ("mouseMoved", "left", 1)
    assert (wheel["type"], wheel["deltaY"]) == ("mouseWheel", 120)


def test_text_is_inserted_and_recorded_by_count_only() -> None:
    gesture = decode_gesture({"text": {"text": "hunter2"}})
    assert to_cdp(gesture, touch=False) == [("Input.insertText", {"text": "hunter2"})]
    assert record_fields(gesture) == {"gesture": "text", "chars": 7}
    assert record_fields(Press(1, 1, "left", True)) == {"gesture": "press"}
    assert is_discrete(gesture)
    assert not is_discrete(Move(0, 0))


def test_malformed_gestures_are_refused_in_words() -> None:
    with pytest.raises(ClientRefusal, match="unknown gesture"):
        decode_gesture({"fly": {}})
    with pytest.raises(ClientRefusal, match="exactly one gesture"):
        decode_gesture("press")
    with pytest.raises(GestureInvalid, match="not left, middle or right"):
        to_cdp(Press(1, 1, "thumb", True), touch=False)


def test_pointer_stream_keeps_one_in_flight_and_the_newest_waiting() -> None:
    stream = PointerStream()
    assert stream.offer(Move(1, 1))
    assert not stream.offer(Move(2, 2))
    assert not stream.offer(Move(3, 3))
    assert stream.landed() == Move(3, 3)
    assert stream.in_flight
    assert stream.landed() is None
    assert not stream.in_flight


def test_waiting_wheels_add_up_and_land_before_a_press() -> None:
    stream = PointerStream()
    assert stream.offer(Wheel(0, 0, 0, 10))
    stream.offer(Wheel(0, 0, 1, 20))
    stream.offer(Wheel(0, 0, 2, 30))
    assert stream.before_discrete() == Wheel(0, 0, 3, 50)
    stream.offer(Move(1, 1))
    assert stream.before_discrete() is None
    stream.reset()
    assert stream.offer(Move(1, 1))


def test_text_mods_are_decoded_too() -> None:
    assert decode_gesture({"text": {"text": "x", "mods": {"alt": True}}}) == Text(
        "x", Modifiers(alt=True)
    )
