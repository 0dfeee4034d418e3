"""What clients see of terminals, built by forge.wire.terminal: the same JSON as ever, and read
back by the client from the same structs."""

from __future__ import annotations

import json

from forge.client.frames import TerminalControl, TerminalView, decode_frame
from forge.wire import server
from forge.wire import terminal as wire
from forge.wire.seats import Seat

SEAT = Seat("acme", "forge", "main")
SEAT_JSON = {"org": "acme", "project": "forge", "label": "main"}
SUMMARY = wire.TerminalSummary(
    id=1,
    shell="/bin/bash",
    pid=42,
    cwd="/tmp",
    cols=80,
    rows=24,
    alive=True,
    state="idle",
    source="process",
    title="",
    held=False,
    exit_status=None,
)


def test_a_terminal_view_is_the_same_json_and_reads_back() -> None:
    view = wire.TerminalView(
        seat=SEAT, id=1, cols=80, rows=24, seq=9, screen="\x1b[H", viewers=2, viewer=3,
        controller=None,
    )  # fmt: skip
    text = server.JsonFrame.encode(view).text
    assert list(json.loads(text).items()) == [
        ("kind", "terminal_view"), ("seat", SEAT_JSON), ("id", 1), ("cols", 80), ("rows", 24),
        ("seq", 9), ("screen", "\x1b[H"), ("viewers", 2), ("viewer", 3), ("controller", None),
    ]  # fmt: skip
    frame = decode_frame(text.decode())
    assert isinstance(frame, TerminalView)
    assert frame == view


def test_a_control_notice_is_the_same_json_and_reads_back() -> None:
    notice = wire.TerminalControl(seat=SEAT, id=2, controller=1)
    text = server.JsonFrame.encode(notice).text.decode()
    assert json.loads(text) == {
        "kind": "terminal_control", "seat": SEAT_JSON, "id": 2, "controller": 1,
    }  # fmt: skip
    assert decode_frame(text) == notice
    assert isinstance(decode_frame(text), TerminalControl)


def test_the_client_ignores_fields_it_does_not_know() -> None:
    raw = {
        "kind": "terminal_control", "seat": SEAT_JSON, "id": 2, "controller": None, "new": 1,
    }  # fmt: skip
    assert decode_frame(json.dumps(raw)) == wire.TerminalControl(seat=SEAT, id=2, controller=None)


def test_terminal_changed_carries_the_summary_and_a_reason_only_once_the_host_is_gone() -> None:
    body = wire.terminal_changed(SEAT, SUMMARY)
    assert body["key"] == SEAT_JSON
    assert list(body["terminal"]) == [
        "id", "shell", "pid", "cwd", "cols", "rows", "alive", "state", "source", "title", "held",
        "exit_status",
    ]  # fmt: skip
    gone = wire.terminal_changed(SEAT, SUMMARY.host_gone("worker_crashed"))["terminal"]
    assert (gone["alive"], gone["state"], gone["reason"]) == (False, "exited", "worker_crashed")
    assert list(gone)[-1] == "reason"
    assert wire.terminal_changed(SEAT, None) == {"key": SEAT_JSON, "terminal": None}


def test_view_replies_are_ok_with_an_id_or_not_ok_with_why() -> None:
    opened = server.JsonFrame.encode(server.Reply(reply_to=1, body=wire.ViewOpened(id=3))).text
    refused = server.JsonFrame.encode(server.Reply(reply_to=2, body=server.Refused(why="no"))).text
    assert json.loads(opened) == {"kind": "reply", "reply_to": 1, "body": {"ok": True, "id": 3}}
    assert json.loads(refused)["body"] == {"ok": False, "why": "no"}


def test_kind_4_reads_back_or_is_none_without_a_whole_header() -> None:
    assert wire.decode_terminal_output(b"\x04\x02\x00\x07\x00\x00\x00hi") == wire.TerminalOutput(
        2, 7, b"hi"
    )
    assert wire.decode_terminal_output(b"\x04\x02") is None


def test_the_errors_that_end_an_attachment_name_the_verb_a_client_reacts_to() -> None:
    assert wire.closed(SEAT, 3) == server.Error(
        what="terminal_close", why="terminal 3 closed", seat=SEAT
    )
    lost = wire.host_stopped(SEAT, 3, "worker_crashed")
    assert (lost.what, lost.seat) == ("terminal_view", SEAT)
    assert "worker_crashed" in lost.why
