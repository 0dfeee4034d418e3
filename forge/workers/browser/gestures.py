"""A person's gesture (O-BR1's JSON) parsed, recorded without its secrets, and turned into CDP.

The wire carries gestures, not Chromium's protocol: `{"press": {...}}`, `{"move": {...}}`,
`{"wheel": {...}}`, `{"key": {...}}`, `{"text": {...}}`, each with `mods{alt,ctrl,meta,shift}`,
x and y in the page viewport's CSS pixels (the kind-1 header's page width and height).
Everything here is pure: the host sends what `to_cdp` returns, and `PointerStream` decides when.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from forge.errors import PeerError
from forge.workers.browser.cdp import JsonObject


class GestureInvalid(PeerError):
    """A browser_input event that is not one of O-BR1's shapes; the message says what is wrong."""


@dataclass(frozen=True)
class Mods:
    alt: bool = False
    ctrl: bool = False
    meta: bool = False
    shift: bool = False

    @property
    def cdp(self) -> int:
        """CDP's modifier bit set: Alt=1, Ctrl=2, Meta=4, Shift=8."""
        return self.alt * 1 | self.ctrl * 2 | self.meta * 4 | self.shift * 8


@dataclass(frozen=True)
class Press:
    x: float
    y: float
    button: str
    down: bool
    clicks: int
    mods: Mods


@dataclass(frozen=True)
class Move:
    x: float
    y: float
    buttons: int
    mods: Mods


@dataclass(frozen=True)
class Wheel:
    x: float
    y: float
    dx: float
    dy: float
    mods: Mods


@dataclass(frozen=True)
class Key:
    key: str
    code: str
    down: bool
    mods: Mods


@dataclass(frozen=True)
class Text:
    text: str
    mods: Mods


Gesture = Press | Move | Wheel | Key | Text

_BUTTONS = {
    0: "left",
    1: "middle",
    2: "right",
    "left": "left",
    "middle": "middle",
    "right": "right",
}
_BUTTON_BITS = {"left": 1, "right": 2, "middle": 4}


def _number(body: dict[str, Any], name: str, kind: str, default: float | None = None) -> float:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise GestureInvalid(f"{kind}.{name} must be a finite number")
    return float(value)


def _mods(body: dict[str, Any], kind: str) -> Mods:
    raw = body.get("mods") or {}
    if not isinstance(raw, dict):
        raise GestureInvalid(f"{kind}.mods must be an object")
    return Mods(*(bool(raw.get(name, False)) for name in ("alt", "ctrl", "meta", "shift")))


def parse_gesture(event: object) -> Gesture:
    """One O-BR1 event, checked; anything else raises `GestureInvalid`."""
    if not isinstance(event, dict) or len(event) != 1:
        raise GestureInvalid(
            "an input event is an object with one key: press, move, wheel, key or text"
        )
    ((kind, body),) = event.items()
    if not isinstance(body, dict):
        raise GestureInvalid(f"{kind} must be an object")
    mods = _mods(body, kind)
    if kind == "press":
        button = _BUTTONS.get(body.get("button", 0))
        if button is None:
            raise GestureInvalid("press.button must be 0, 1, 2, left, middle or right")
        clicks = int(_number(body, "clicks", kind, 1))
        return Press(
            _number(body, "x", kind), _number(body, "y", kind), button,
            bool(body.get("down", True)), max(1, clicks), mods,
        )  # fmt: skip
    if kind == "move":
        buttons = int(_number(body, "buttons", kind, 0))
        return Move(_number(body, "x", kind), _number(body, "y", kind), buttons, mods)
    if kind == "wheel":
        return Wheel(
            _number(body, "x", kind), _number(body, "y", kind),
            _number(body, "dx", kind, 0), _number(body, "dy", kind, 0), mods,
        )  # fmt: skip
    if kind == "key":
        key, code = body.get("key"), body.get("code", "")
        if not isinstance(key, str) or not key or not isinstance(code, str):
            raise GestureInvalid("key.key must be a non-empty string and key.code a string")
        return Key(key, code, bool(body.get("down", True)), mods)
    if kind == "text":
        text = body.get("text")
        if not isinstance(text, str):
            raise GestureInvalid("text.text must be a string")
        return Text(text, mods)
    raise GestureInvalid(f"unknown input event {kind!r}: press, move, wheel, key or text")


def gesture_kind(gesture: Gesture) -> str:
    return type(gesture).__name__.lower()


def is_discrete(gesture: Gesture) -> bool:
    """A move is a stream; everything else is a discrete gesture that a refusal records."""
    return not isinstance(gesture, Move)


def record_fields(gesture: Gesture) -> dict[str, object]:
    """What a refusal record may hold: the kind and, for text, the count, never the characters."""
    if isinstance(gesture, Text):
        return {"gesture": "text", "chars": len(gesture.text)}
    return {"gesture": gesture_kind(gesture)}


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
        if touch and gesture.button == "left":
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
                    "button": gesture.button,
                    "buttons": _BUTTON_BITS[gesture.button] if gesture.down else 0,
                    "clickCount": gesture.clicks,
                    "modifiers": gesture.mods.cdp,
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
                    "modifiers": gesture.mods.cdp,
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
                    "modifiers": gesture.mods.cdp,
                },
            )
        ]
    if isinstance(gesture, Key):
        params: JsonObject = {
            "key": gesture.key,
            "code": gesture.code,
            "windowsVirtualKeyCode": _virtual_key(gesture.key),
            "modifiers": gesture.mods.cdp,
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
            gesture = replace(gesture, dx=waiting.dx + gesture.dx, dy=waiting.dy + gesture.dy)
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
