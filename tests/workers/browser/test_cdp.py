"""The CDP message layer, without a browser: ids, replies, errors, events by session, detaches."""

from __future__ import annotations

import json

import pytest

from forge.workers.browser.cdp import DETACHED_CODE, CdpEvent, CdpProtocol, CdpReply


def wire(message: dict[str, object]) -> bytes:
    return json.dumps(message).encode() + b"\0"


def test_commands_get_increasing_ids_and_nul_framed_json() -> None:
    protocol = CdpProtocol()
    first = protocol.command("Browser.getVersion")
    second = protocol.command("Page.enable", {"x": 1}, session_id="S1")
    raw = protocol.data_to_send()
    assert second == first + 1
    messages = [json.loads(part) for part in raw.split(b"\0") if part]
    assert messages == [
        {"id": first, "method": "Browser.getVersion", "params": {}},
        {"id": second, "method": "Page.enable", "params": {"x": 1}, "sessionId": "S1"},
    ]
    assert protocol.data_to_send() == b""
    assert protocol.pending == 2


def test_reply_split_across_reads_is_matched_to_its_command() -> None:
    protocol = CdpProtocol()
    command_id = protocol.command("Target.getTargets")
    data = wire({"id": command_id, "result": {"targetInfos": []}})
    protocol.receive_data(data[:5])
    assert protocol.messages_received() == []
    protocol.receive_data(data[5:])
    assert protocol.messages_received() == [
        CdpReply(command_id, "Target.getTargets", None, result={"targetInfos": []})
    ]
    assert protocol.pending == 0


def test_error_reply_carries_the_method_code_and_words() -> None:
    protocol = CdpProtocol()
    command_id = protocol.command("DOM.setFileInputFiles", session_id="S")
    protocol.receive_data(
        wire({"id": command_id, "sessionId": "S", "error": {"code": -32000, "message": "No node"}})
    )
    (reply,) = protocol.messages_received()
    assert isinstance(reply, CdpReply)
    assert not reply.ok
    assert (reply.method, reply.error_code, reply.error_message) == (
        "DOM.setFileInputFiles",
        -32000,
        "No node",
    )


def test_events_keep_their_session_and_order_with_replies() -> None:
    protocol = CdpProtocol()
    command_id = protocol.command("Page.navigate", session_id="S")
    protocol.receive_data(
        wire({"method": "Page.frameNavigated", "params": {"frame": {}}, "sessionId": "S"})
        + wire({"id": command_id, "result": {}, "sessionId": "S"})
        + wire({"method": "Target.targetCreated", "params": {"targetInfo": {}}})
    )
    kinds = [
        (m.method, m.session_id) if isinstance(m, CdpEvent) else ("reply", m.session_id)
        for m in protocol.messages_received()
    ]
    assert kinds == [("Page.frameNavigated", "S"), ("reply", "S"), ("Target.targetCreated", None)]


def test_a_detached_session_answers_its_waiting_commands_with_an_error() -> None:
    protocol = CdpProtocol()
    attached = {"sessionId": "S", "targetInfo": {"targetId": "T", "type": "page"}}
    protocol.receive_data(wire({"method": "Target.attachedToTarget", "params": attached}))
    assert protocol.target_of("S") == "T"
    waiting = protocol.command("Page.captureScreenshot", session_id="S")
    other = protocol.command("Browser.getVersion")
    protocol.messages_received()
    detached = {"sessionId": "S", "targetId": "T"}
    protocol.receive_data(wire({"method": "Target.detachedFromTarget", "params": detached}))
    event, reply = protocol.messages_received()
    assert isinstance(event, CdpEvent)
    assert isinstance(reply, CdpReply)
    assert (reply.id, reply.error_code) == (waiting, DETACHED_CODE)
    assert protocol.target_of("S") is None
    assert protocol.pending == 1
    (failed,) = protocol.fail_pending("pipe closed")
    assert (failed.id, failed.error_message) == (other, "pipe closed")


def test_a_reply_to_no_command_is_ignored() -> None:
    protocol = CdpProtocol()
    protocol.receive_data(wire({"id": 99, "result": {}}))
    assert protocol.messages_received() == []


def test_malformed_json_is_an_error_for_the_caller() -> None:
    with pytest.raises(ValueError, match="Expecting"):
        CdpProtocol().receive_data(b"{nope\0")
