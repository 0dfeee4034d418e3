"""The browser's server messages (`forge.wire.browser`) as the bytes a client reads.

These were literal dicts in the supervisor until the messages became structs; the table pins the
JSON text (key order included) they encoded to then, so the move changed nothing on the wire.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from forge.wire import browser
from forge.wire.seats import Seat
from forge.wire.server import JsonFrame, Refused, Reply


def reply(reply_to: int | str, body: msgspec.Struct) -> Reply:
    return Reply(reply_to=reply_to, body=body)


SEAT = Seat("o", "p", "l")
ROW = browser.TabRow(
    number=1, title="t", url="u", owner=SEAT, opener=None, dialog=browser.Dialog("alert", "hi")
)
ROW_JSON = (
    '{"number":1,"title":"t","url":"u","owner":{"org":"o","project":"p","label":"l"},'
    '"opener":null,"state":"idle","dialog":{"kind":"alert","message":"hi"}}'
)
STATE: dict[str, Any] = {"profile": "a/b", "id": 3, "up": True, "closing_at_ms": 5, "rows": [ROW]}
STATE_JSON = (
    '"profile":"a/b","id":3,"up":true,"connected":false,"closing_at_ms":5,"audio_off":null,'
    '"sandbox_off":null,'
    f'"rows":[{ROW_JSON}]'
)

CASES: list[tuple[msgspec.Struct | dict[str, object], str]] = [
    (browser.BrowserTabs(**STATE), f'{{"kind":"browser_tabs",{STATE_JSON}}}'),
    (
        browser.BrowserView(id=1, profile="a/b", tab=2, controller=None, viewers=1, viewer=4),
        '{"kind":"browser_view","id":1,"profile":"a/b","tab":2,"controller":null,"viewers":1,'
        '"viewer":4}',
    ),
    (
        browser.BrowserNavState(id=1, tab=2, can_back=True, can_forward=False),
        '{"kind":"browser_nav_state","id":1,"tab":2,"can_back":true,"can_forward":false}',
    ),
    (
        browser.BrowserSurfaceFailed(id=1, tab=2, reason="x"),
        '{"kind":"browser_surface_failed","id":1,"tab":2,"reason":"x"}',
    ),
    (
        browser.BrowserFileDialog(id=1, tab=2, multiple=True),
        '{"kind":"browser_file_dialog","id":1,"tab":2,"multiple":true}',
    ),
    (
        browser.BrowserDownload(tab=2, name="n", data="ZA==", error=None),
        '{"kind":"browser_download","tab":2,"name":"n","data":"ZA==","error":null,"dropped":false}',
    ),
    (
        browser.BrowserDownload(tab=None, name="n", data=None, error="e"),
        '{"kind":"browser_download","tab":null,"name":"n","data":null,"error":"e","dropped":false}',
    ),
    (
        browser.BrowserDownload.loss(3),
        '{"kind":"browser_download","name":null,"data":null,"error":null,"dropped":true,"lost":3}',
    ),
    (
        reply("r", browser.Tabs(tabs=browser.TabsState(**STATE))),
        f'{{"kind":"reply","reply_to":"r","body":{{"ok":true,"tabs":{{{STATE_JSON}}}}}}}',
    ),
    (
        reply(1, Refused(why="w")),
        '{"kind":"reply","reply_to":1,"body":{"ok":false,"why":"w"}}',
    ),
    (
        reply(1, browser.PageGone(why="w", target="T", tabs=[ROW])),
        '{"kind":"reply","reply_to":1,"body":{"ok":false,"why":"w","target":"T","tabs":['
        f"{ROW_JSON}]}}}}",
    ),
    (reply(1, browser.Done()), '{"kind":"reply","reply_to":1,"body":{"ok":true}}'),
    (
        reply(1, browser.Attached(profile="a/b", tab=2)),
        '{"kind":"reply","reply_to":1,"body":{"ok":true,"profile":"a/b","tab":2}}',
    ),
    (reply(1, browser.Opened(tab=2)), '{"kind":"reply","reply_to":1,"body":{"ok":true,"tab":2}}'),
]


@pytest.mark.parametrize(("message", "text"), CASES)
def test_each_message_encodes_to_the_bytes_clients_read(
    message: msgspec.Struct | dict[str, object], text: str
) -> None:
    assert JsonFrame.encode(message).text.decode() == text
