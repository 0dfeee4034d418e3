"""The rest of an agent seat's surface through a real `forge supervise`, the real Claude Code CLI
and the scripted model: effort, context usage, the CLI's catalogues, the usage pool, a tool
call's lifecycle, a background call's output (and the walls around it), folded token appends,
and asks answered only by answering connections."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.supervisor.agent.conftest import (
    SEAT,
    AgentSupervisor,
    Frame,
    Reader,
    body,
    ended,
    hold_session,
    reader,
    spawn,
    update,
    updates,
)

pytestmark = pytest.mark.timeout(600)


def lifecycle_of(connection: Reader, call_id: str) -> list[tuple[str, str | None]]:
    return [
        (change["phase"], change["outcome"])
        for change in updates(connection, "command_lifecycle")
        if change["id"] == call_id
    ]


async def read_output(connection: Reader, call_id: str) -> Frame:
    return await connection.ask(
        {"kind": "command", "command": {"read_call_output": {"key": SEAT, "id": call_id}}},
        lambda f: update("call_output")(f) or f["kind"] == "error",
    )


async def test_a_background_call_s_lifecycle_and_output_and_the_walls_around_it(
    agent_supervisor: AgentSupervisor, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_TMPDIR", str(tmp_path / "cli-tmp"))
    (tmp_path / "cli-tmp").mkdir()
    command = "printf 'one\\ntwo\\nthree\\n'"
    _, supervised, _ = await agent_supervisor(
        {
            "tool": {
                "name": "Bash",
                "input": {"command": command, "run_in_background": True, "description": "count"},
            }
        },
        {"when": {"tool_result": "Bash"}, "say": "It runs."},
        {"say": "It finished."},
    )
    phone = await reader(supervised, answering=True)
    await spawn(phone)
    await hold_session(phone)
    await phone.command("prompt", {"key": SEAT, "text": "Count in the background."})
    await phone.first(ended)
    call_id = body(await phone.first(update("command_lifecycle")))["id"]
    await phone.first(
        lambda f: (
            update("command_lifecycle")(f)
            and body(f)["id"] == call_id
            and body(f)["phase"] == "ended"
        )
    )
    assert lifecycle_of(phone, call_id) == [
        ("requested", None),
        ("backgrounded", None),
        ("ended", "ok"),
    ], "the CLI reports a task's end twice; the seat says it once"
    [requested] = [
        block
        for m in updates(phone, "chat_appended")
        if m["msg"]["type"] == "assistant"
        for block in m["msg"]["blocks"]
        if block["type"] == "tool_use"
    ]
    assert requested["id"] == call_id, "the lifecycle's id is the conversation's tool_use id"

    answer = await read_output(phone, call_id)
    assert answer["kind"] == "update"
    assert "seq" in answer, "out of band: seq is null, not absent"
    assert (answer["seq"], answer["span"]) == (None, 1)
    output = body(answer)
    assert (output["reason"], output["running"]) == (None, False)
    assert output["lines"][:3] == ["one", "two", "three"], "the file as the CLI wrote it"

    unknown = body(await read_output(phone, "../../../../etc/passwd"))
    assert (unknown["lines"], unknown["reason"]) == ([], "no_call")
    [task_file] = (tmp_path / "cli-tmp").glob(f"claude-*/*/*/tasks/{output['task_id']}.output")
    secret = tmp_path / "secret.txt"
    secret.write_text("the private key\n")
    task_file.unlink()
    task_file.symlink_to(secret)
    planted = body(await read_output(phone, call_id))
    assert (planted["lines"], planted["reason"]) == ([], "unreadable")
    assert not any("the private key" in text for text in phone.raw)


async def test_effort_context_usage_catalogues_and_the_usage_pool(
    agent_supervisor: AgentSupervisor,
) -> None:
    server, supervised, _ = await agent_supervisor(
        {"say": "One.", "usage": {"input_tokens": 120, "output_tokens": 7}},
        {"when": {"user_text": "Two."}, "say": "Two."},
        {"when": {"user_text": "Three."}, "say": "Three, slowly.", "stall": {"after": 1}},
    )
    phone = await reader(supervised)
    await spawn(phone, effort="high")
    await hold_session(phone)
    await phone.client.send(json.dumps({"kind": "showing", "seat": SEAT}))
    await phone.command("prompt", {"key": SEAT, "text": "One."})
    await phone.first(ended)
    assert server.message_requests()[0].body["output_config"]["effort"] == "high"
    commands = body(await phone.first(update("slash_commands_changed")))["slash_commands"]
    assert "compact" in commands
    subagents = body(await phone.first(update("subagents_changed")))["subagents"]
    assert "general-purpose" in subagents
    measured = body(await phone.first(update("context_usage_snapshot")))["context_usage"]
    assert measured["max_tokens"] > measured["total_tokens"] > 0
    held = await hold_session(phone)
    assert (held["slash_commands"], held["subagents"]) == (commands, subagents)
    assert held["header"]["context_usage"] == measured
    assert held["header"]["effort"] == "high"

    since = len(phone.frames)
    await phone.command("set_effort", {"key": SEAT, "effort": "low"})
    header = body(
        await phone.first(
            lambda f: update("agent_header")(f) and body(f)["header"]["effort"] == "low", since
        )
    )
    assert header["header"]["effort"] == "low"
    since = len(phone.frames)
    await phone.command("prompt", {"key": SEAT, "text": "Two."})
    await phone.first(ended, since)
    assert server.message_requests()[-1].body["output_config"]["effort"] == "low"
    turns = (await hold_session(phone))["conversation"]["turns"]
    assert [t["messages"][0]["text"] for t in turns] == ["One.", "Two."], "the same session"

    since = len(phone.frames)
    await phone.command("prompt", {"key": SEAT, "text": "Three."})
    await server.wait_stalled()
    refused = await phone.ask(
        {"kind": "command", "command": {"set_effort": {"key": SEAT, "effort": "max"}}},
        lambda f: f["kind"] == "error",
    )
    assert "between turns" in refused["why"]
    server.release()
    await phone.first(ended, since)

    pool = await phone.ask(
        {"kind": "subscribe", "what": "usage"},
        lambda f: f["kind"] == "snapshot" and f["subject"] == "usage",
    )
    [seat_row] = pool["data"]["lifetime"]["by_seat"]
    assert seat_row["key"] == SEAT
    assert seat_row["input_tokens"] >= 120
    assert seat_row["entries"] == 3
    assert pool["data"]["today"]["total"] == pool["data"]["lifetime"]["total"]
    assert [row["model"] for row in pool["data"]["lifetime"]["by_model"]]


async def test_only_an_answering_connection_may_answer_and_home_says_when_none_can(
    agent_supervisor: AgentSupervisor,
) -> None:
    _, supervised, project = await agent_supervisor(
        {"bash": "echo hi > f.txt"},
        {"when": {"tool_result": "Bash"}, "say": "Done."},
    )
    phone = await reader(supervised)
    await spawn(phone)
    await hold_session(phone)
    await phone.command("prompt", {"key": SEAT, "text": "Make f.txt."})
    ask = body(await phone.first(update("ask_pending")))["ask"]
    unanswerable = await phone.first(
        lambda f: update("seat_changed")(f) and body(f)["row"]["waiting"] is not None
    )
    assert body(unanswerable)["row"]["waiting"]["answerable"] is False
    refused = await phone.ask(
        {
            "kind": "command",
            "command": {"answer": {"key": SEAT, "id": ask["id"], "answer": "allow_once"}},
        },
        lambda f: f["kind"] == "error",
    )
    assert "answering" in refused["why"]
    assert not (project / "f.txt").exists(), "the refused answer ran nothing"

    desk = await reader(supervised, answering=True)
    since = len(phone.frames)
    await hold_session(desk)
    answerable = await phone.first(
        lambda f: (
            update("seat_changed")(f)
            and (body(f)["row"]["waiting"] or {}).get("answerable") is True
        ),
        since,
    )
    assert body(answerable)["row"]["waiting"]["id"] == ask["id"]
    await desk.command("answer", {"key": SEAT, "id": ask["id"], "answer": "allow_once"})
    await phone.first(ended)
    assert (project / "f.txt").read_text() == "hi\n"
    assert lifecycle_of(phone, ask["id"]) == [
        ("requested", None),
        ("asked", None),
        ("ended", "ok"),
    ]
