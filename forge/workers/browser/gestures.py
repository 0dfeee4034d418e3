"""A person's gesture (O-BR1's JSON) turned into CDP calls, and when to send a pointer's.

The wire carries gestures, not Chromium's protocol: `{"press": {...}}`, `{"move": {...}}`,
`{"wheel": {...}}`, `{"key": {...}}`, `{"text": {...}}`, each with `mods{alt,ctrl,meta,shift}`,
x and y in the page viewport's CSS pixels (the kind-1 header's page width and height). The shapes
are `forge.wire.client`'s; everything here is pure: the host sends what `to_cdp` returns, and
`PointerStream` decides when.
"""

from __future__ import annotations

from typing import Any

import msgspec

from forge.errors import PeerError
from forge.wire.client import BrowserInput, Gesture, Key, Modifiers, Move, Press, Wheel
from forge.workers.browser.cdp import JsonObject


class GestureInvalid(PeerError):
    """A gesture the host cannot perform (an unknown button); the message says what is wrong."""


_BUTTONS = {"left": "left", "middle": "middle", "right": "right", "0": "left", "1": "middle",
            "2": "right"}  # fmt: skip
"""O-BR1 leaves the button's spelling open: names, or the DOM's MouseEvent.button numbers."""
_BUTTON_BITS = {"left": 1, "right": 2, "middle": 4}


def decode_gesture(event: Any) -> Gesture:
    """One O-BR1 event, decoded by the wire's own rules (a refusal names browser_input)."""
    return BrowserInput(seq=0, event=event if isinstance(event, dict) else {}).gesture()


def _button(press: Press) -> str:
    button = _BUTTONS.get(press.button)
    if button is None:
        raise GestureInvalid(f"press.button {press.button!r} is not left, middle or right")
    return button


def _modifiers(mods: Modifiers) -> int:
    """CDP's modifier bit set: Alt=1, Ctrl=2, Meta=4, Shift=8."""
    return mods.alt * 1 | mods.ctrl * 2 | mods.meta * 4 | mods.shift * 8


_KEY_CODES = {
    "Backspace": 8, "Tab": 9, "Enter": 13, "Shift": 16, "Control": 17, "Alt": 18, "Escape": 27,
    " ": 32, "PageUp": 33, "PageDown": 34, "End": 35, "Home": 36, "ArrowLeft": 37,
    "ArrowUp": 38, "ArrowRight": 39, "ArrowDown": 40, "Delete": 46, "Meta": 91,
}  # fmt: skip
"""Windows virtual key codes: Chromium acts on a non-text key (Backspace, arrows) only with one."""


def _virtual_key(key: str) -> int:
    if key in _KEY_CODES:
        return _KEY_CODES[key]
    if len(key) == 1 and key.isascii() and key.isalnum():
        return ord(key.upper())
    return 0


Call = tuple[str, JsonObject]


def to_cdp(gesture: Gesture, touch: bool) -> list[Call]:
    """The CDP `Input.*` calls for one gesture; `touch` turns presses and drags into touches."""
    if isinstance(gesture, Press):
        button = _button(gesture)
        if touch and button == "left":
            points = [{"x": gesture.x, "y": gesture.y}] if gesture.down else []
            kind = "touchStart" if gesture.down else "touchEnd"
            return [("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})]
        return [
            (
                "Input.dispatchMouseEvent",
                {
                    "type": "mousePressed" if gesture.down else "mouseReleased",
                    "x": gesture.x,
                    "y": gesture.y,
                    "button": button,
                    "buttons": _BUTTON_BITS[button] if gesture.down else 0,
                    "clickCount": max(1, gesture.clicks),
                    "modifiers": _modifiers(gesture.mods),
                },
            )
        ]
    if isinstance(gesture, Move):
        if touch:
            if not gesture.buttons & 1:
                return []
            points = [{"x": gesture.x, "y": gesture.y}]
            return [("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": points})]
        pressed = next((name for name, bit in _BUTTON_BITS.items() if gesture.buttons & bit), None)
        return [
            (
                "Input.dispatchMouseEvent",
                {
                    "type": "mouseMoved",
                    "x": gesture.x,
                    "y": gesture.y,
                    "button": pressed or "none",
                    "buttons": gesture.buttons,
                    "modifiers": _modifiers(gesture.mods),
                },
            )
        ]
    if isinstance(gesture, Wheel):
        return [
            (
                "Input.dispatchMouseEvent",
                {
                    "type": "mouseWheel",
                    "x": gesture.x,
                    "y": gesture.y,
                    "deltaX": gesture.dx,
                    "deltaY": gesture.dy,
                    "modifiers": _modifiers(gesture.mods),
                },
            )
        ]
    if isinstance(gesture, Key):
        params: JsonObject = {
            "key": gesture.key,
            "code": gesture.code,
            "windowsVirtualKeyCode": _virtual_key(gesture.key),
            "modifiers": _modifiers(gesture.mods),
        }
        typed = "\r" if gesture.key == "Enter" else gesture.key
        plain = not (gesture.mods.ctrl or gesture.mods.meta or gesture.mods.alt)
        if not gesture.down:
            params["type"] = "keyUp"
        elif plain and len(typed) == 1:
            params.update(type="keyDown", text=typed)
        else:
            params["type"] = "rawKeyDown"
        return [("Input.dispatchKeyEvent", params)]
    return [("Input.insertText", {"text": gesture.text})]


class PointerStream:
    """At most one move or wheel in flight per tab; newer moves replace the waiting one.

    Input never waits behind a reply, yet moves and wheels must not pile up behind a slow page:
    `offer` says whether to send now; `landed` (the reply came) hands back the gesture to send next.
    Wheel deltas that wait are summed, so a fast scroll loses no distance.
    """

    def __init__(self) -> None:
        self.in_flight = False
        self._waiting: Move | Wheel | None = None

    def offer(self, gesture: Move | Wheel) -> bool:
        if not self.in_flight:
            self.in_flight = True
            return True
        waiting = self._waiting
        if isinstance(gesture, Wheel) and isinstance(waiting, Wheel):
            gesture = msgspec.structs.replace(
                gesture, dx=waiting.dx + gesture.dx, dy=waiting.dy + gesture.dy
            )
        self._waiting = gesture
        return False

    def landed(self) -> Move | Wheel | None:
        waiting, self._waiting = self._waiting, None
        self.in_flight = waiting is not None
        return waiting

    def before_discrete(self) -> Wheel | None:
        """A press or key is coming: a waiting move is moot (the press carries its point), a
        waiting wheel must land first so scroll and click keep their order."""
        waiting, self._waiting = self._waiting, None
        return waiting if isinstance(waiting, Wheel) else None

    def reset(self) -> None:
        """A dialog opened: the call in flight will not answer until it closes."""
        self.in_flight = False
        self._waiting = None
