"""An agent seat through a real `forge supervise`: two connections see one turn the same way,
a permission ask answered from the other connection, a denial with its reason, an interrupt
mid-stream, and the conversation paged from the CLI's transcript across a supervisor restart."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
from pathlib import Path

import pytest
import watchfiles

from forge.testing.model_conversation import tool_results
from forge.testing.supervised import Start
from tests.supervisor.agent.conftest import (
    SEAT,
    WITHIN,
    AgentSupervisor,
    Frame,
    Reader,
    add_worktree,
    body,
    config_for,
    ended,
    hold_session,
    reader,
    seat_updates_raw,
    spawn,
    update,
    updates,
)

pytestmark = pytest.mark.timeout(600)


def turn_frames(frames: list[str]) -> list[str]:
    """A connection's raw frames from the prompt's `started` to its `ended`."""
    start = next(i for i, f in enumerate(frames) if '"prompt_lifecycle"' in f)
    end = next(i for i, f in enumerate(frames) if '"prompt_lifecycle"' in f and '"ended"' in f)
    return frames[start : end + 1]


async def test_a_turn_streams_to_two_connections_as_the_same_frames(
    agent_supervisor: AgentSupervisor,
) -> None:
    text = "Hello from the scripted model, in several deltas for both phones."
    _, supervised, _ = await agent_supervisor({"say": text})
    phone, desk = await reader(supervised), await reader(supervised)
    await spawn(phone)
    before = await hold_session(phone)
    assert before["header"]["turn_in_flight"] is False
    await hold_session(desk)
    await phone.command("prompt", {"key": SEAT, "text": "Say hello."})
    await phone.first(ended)
    await desk.first(ended)
    deltas = [
        m["msg"]["text"] for m in updates(phone, "chat_appended") if m["msg"]["type"] == "delta"
    ]
    assert "".join(deltas) == text, "token appends cross whole, folded or not"
    numbered = [f for f in phone.frames if f["kind"] == "update" and "seq" in f]
    for earlier, later in itertools.pairwise(numbered):
        assert later["seq"] == earlier["seq"] + earlier["span"], "a folded run keeps its numbers"
    [user] = [m["msg"] for m in updates(phone, "chat_appended") if m["msg"]["type"] == "user"]
    assert user["text"] == "Say hello."
    # From the prompt's start to its end: what follows the end (the context usage asked once
    # the turn is over) may reach one connection before the other.
    assert turn_frames(seat_updates_raw(phone)) == turn_frames(seat_updates_raw(desk)), (
        "the same bytes, the same seq, in the same order"
    )
    after = await hold_session(desk)
    assert after["header"]["turn_in_flight"] is False
    [settled] = after["conversation"]["turns"]
    assert [m["type"] for m in settled["messages"]] == ["user", "assistant"]
    assert settled["messages"][1]["blocks"] == [{"type": "text", "text": text}]


async def test_a_bash_ask_waits_until_the_other_connection_allows_it(
    agent_supervisor: AgentSupervisor,
) -> None:
    server, supervised, project = await agent_supervisor(
        {"bash": "echo hi > f.txt && echo made it"},
        {"when": {"tool_result": "Bash"}, "say": "Done."},
    )
    phone, desk = await reader(supervised), await reader(supervised, answering=True)
    await spawn(phone)
    await hold_session(phone)
    await hold_session(desk)
    await phone.command("prompt", {"key": SEAT, "text": "Make f.txt."})
    raised = body(await desk.first(update("ask_pending")))["ask"]
    assert (raised["kind"], raised["tool_name"]) == ("permission", "Bash")
    assert raised["input"]["command"] == "echo hi > f.txt && echo made it"
    home_row = await phone.first(
        lambda f: update("seat_changed")(f) and body(f)["row"]["waiting"] is not None
    )
    assert body(home_row)["row"]["waiting"] == {
        "kind": "permission",
        "id": raised["id"],
        "behind": 0,
        "answerable": True,
    }
    assert not (project / "f.txt").exists(), "the call is held until answered"
    held = await hold_session(phone)
    assert [ask["id"] for ask in held["pending_asks"]] == [raised["id"]]
    await desk.command("answer", {"key": SEAT, "id": raised["id"], "answer": "allow_once"})
    await phone.first(ended)
    assert (project / "f.txt").read_text() == "hi\n"
    assert updates(phone, "ask_resolved") == [
        {"key": SEAT, "id": raised["id"], "outcome": "answered"}
    ]
    [result] = [
        m["msg"] for m in updates(phone, "chat_appended") if m["msg"]["type"] == "tool_result"
    ]
    assert (result["tool_use_id"], result["is_error"]) == (raised["id"], False)
    assert "made it" in result["text"]
    again = await desk.ask(
        {
            "kind": "command",
            "command": {"answer": {"key": SEAT, "id": raised["id"], "answer": "allow_once"}},
        },
        lambda f: f["kind"] == "error",
    )
    assert "no ask" in again["why"]
    settled = (await hold_session(phone))["conversation"]["turns"][-1]["messages"]
    assert any(m["type"] == "tool_result" and "made it" in m["text"] for m in settled)
    assert tool_results(server.message_requests()[1].body)[0].tool_name == "Bash"


async def test_a_denial_reaches_the_model_with_its_reason(
    agent_supervisor: AgentSupervisor,
) -> None:
    server, supervised, project = await agent_supervisor(
        {"bash": "echo hi > f.txt"},
        {"when": {"tool_result": "Bash", "tool_error": True}, "say": "Understood."},
    )
    phone = await reader(supervised, answering=True)
    await spawn(phone)
    await hold_session(phone)
    await phone.command("prompt", {"key": SEAT, "text": "Make f.txt."})
    raised = body(await phone.first(update("ask_pending")))["ask"]
    wrong = await phone.ask(
        {
            "kind": "command",
            "command": {
                "answer": {"key": SEAT, "id": raised["id"], "answer": {"choose": {"answers": {}}}}
            },
        },
        lambda f: f["kind"] == "error",
    )
    assert "permission ask" in wrong["why"]
    reason = "Not in this repository, please."
    await phone.command(
        "answer", {"key": SEAT, "id": raised["id"], "answer": {"deny": {"reason": reason}}}
    )
    await phone.first(ended)
    assert not (project / "f.txt").exists()
    [result] = tool_results(server.message_requests()[1].body)
    assert result.is_error
    assert reason in result.text
    said = [m["msg"] for m in updates(phone, "chat_appended") if m["msg"]["type"] == "result"]
    assert said[-1]["text"] == "Understood."


async def test_cancel_interrupts_a_turn_mid_stream(agent_supervisor: AgentSupervisor) -> None:
    server, supervised, _ = await agent_supervisor(
        {"say": "A long answer that will not finish.", "stall": {"after": 2}},
        {"when": {"user_text": "Go on."}, "say": "Going on."},
    )
    phone = await reader(supervised)
    await spawn(phone)
    await hold_session(phone)
    await phone.command("prompt", {"key": SEAT, "text": "Talk for a while."})
    await server.wait_stalled()
    await phone.first(lambda f: update("chat_appended")(f) and body(f)["msg"]["type"] == "delta")
    assert (await hold_session(phone))["header"]["turn_in_flight"] is True
    await phone.command("cancel", {"key": SEAT})
    cut = body(await phone.first(ended))
    assert cut["outcome"] == "interrupted"
    idle = await phone.ask(
        {"kind": "command", "command": {"cancel": {"key": SEAT}}}, lambda f: f["kind"] == "error"
    )
    assert idle["why"] == "no turn is running on seat acme/web/main"
    since = len(phone.frames)
    await phone.command("prompt", {"key": SEAT, "text": "Go on."})
    after = body(await phone.first(ended, since))
    assert after["outcome"] == "completed"


async def test_more_after_a_supervisor_restart_returns_the_same_turns(
    agent_supervisor: AgentSupervisor, supervise: Start
) -> None:
    _, supervised, project = await agent_supervisor(
        {"say": "First answer."},
        {"when": {"user_text": "Second."}, "say": "Second answer."},
        {"when": {"user_text": "Third."}, "say": "Third answer."},
    )
    phone = await reader(supervised)
    await spawn(phone)
    await hold_session(phone)
    for words in ("First.", "Second.", "Third."):
        since = len(phone.frames)
        await phone.command("prompt", {"key": SEAT, "text": words})
        await phone.first(ended, since)
    newest, older = await two_pages(phone)
    assert [t["messages"][0]["text"] for t in newest["turns"]] == ["Second.", "Third."]
    assert [t["messages"][-1]["blocks"][0]["text"] for t in newest["turns"]] == [
        "Second answer.",
        "Third answer.",
    ]
    assert [t["messages"][0]["text"] for t in older["turns"]] == ["First."]
    assert older["cursor"] is None

    await supervised.stop()
    restarted = await supervise(config_for(project))
    again = await reader(restarted)
    home = next(f for f in again.frames if f["kind"] == "snapshot")["data"]
    if not any(row["slot"] == SEAT and row["lifecycle"] == "idle" for row in home["agents"]):
        await again.first(
            lambda f: update("seat_changed")(f) and body(f)["row"]["lifecycle"] == "idle"
        )
    assert await two_pages(again) == (newest, older)
    resumed = await hold_session(again)
    assert resumed["conversation"]["turns"] == older["turns"] + newest["turns"]


async def two_pages(connection: Reader) -> tuple[Frame, Frame]:
    """The newest two turns' page and the page above it."""
    newest = await connection.ask(
        {"kind": "more", "conversation": SEAT, "before": None, "turns": 2},
        lambda f: f["kind"] == "page",
    )
    older = await connection.ask(
        {"kind": "more", "conversation": SEAT, "before": newest["cursor"], "turns": 2},
        lambda f: f["kind"] == "page",
    )
    return newest, older


async def transcript_holds(config: Path, text: str) -> None:
    """Until the CLI's transcript under `config` holds `text`: it writes a turn's lines a
    moment after it sends the request, and a session killed before that has nothing to resume."""

    def holds() -> bool:
        transcripts = config.glob("projects/*/*.jsonl")
        return any(text in path.read_text("utf-8", "replace") for path in transcripts)

    async with asyncio.timeout(WITHIN):
        async for _ in watchfiles.awatch(config, rust_timeout=1000, yield_on_timeout=True):
            if holds():
                return


async def test_a_worker_killed_mid_turn_is_reported_then_resumed(
    agent_supervisor: AgentSupervisor, tmp_path: Path
) -> None:
    server, supervised, _ = await agent_supervisor(
        {"say": "A long answer that will not finish.", "stall": {"after": 2}},
        {"when": {"user_text": "Go on."}, "say": "Going on."},
    )
    phone = await reader(supervised)
    spawned = await spawn(phone)
    await hold_session(phone)
    await phone.command("prompt", {"key": SEAT, "text": "Talk for a while."})
    await server.wait_stalled()
    await transcript_holds(tmp_path / "claude-config", "Talk for a while.")
    started = await supervised.record("worker_spawned", kind="agent")
    os.kill(started["pid"], signal.SIGKILL)
    cut = body(await phone.first(ended))
    assert cut["outcome"] == "failed"
    crashed = await phone.first(
        lambda f: update("seat_changed")(f) and body(f)["row"]["lifecycle"] == "crashed"
    )
    assert "restarting" in body(crashed)["row"]["failed"]
    assert updates(phone, "agent_problem")
    since = phone.frames.index(crashed)
    await phone.first(
        lambda f: update("seat_changed")(f) and body(f)["row"]["lifecycle"] == "idle", since
    )
    since = len(phone.frames)
    await phone.command("prompt", {"key": SEAT, "text": "Go on."})
    after = body(await phone.first(ended, since))
    assert after["outcome"] == "completed"
    header = (await hold_session(phone))["header"]
    assert header["agent_session_id"] is not None
    assert spawned["session_id"] in (None, header["agent_session_id"])
    turns = (await hold_session(phone))["conversation"]["turns"]
    prompts = [t["messages"][0]["text"] for t in turns if t["messages"][0]["type"] == "user"]
    assert prompts[-1] == "Go on."
    assert "Talk for a while." in prompts, "the resumed session kept the first turn"


async def test_spawn_runs_only_in_the_projects_own_worktrees_and_despawn_ends_it(
    agent_supervisor: AgentSupervisor, tmp_path: Path
) -> None:
    _, supervised, project = await agent_supervisor({"say": "unreached"})
    outside = tmp_path / "outside"
    outside.mkdir()
    tree = add_worktree(project, tmp_path / "web-feature")
    phone = await reader(supervised)
    for named in (str(outside), "../outside", "/etc", ".git"):
        refused = await phone.command("spawn", {"key": SEAT, "worktree": named}, reply_to=1)
        assert refused is not None
        assert refused["ok"] is False
        assert "is not one of project" in refused["why"], refused
    unknown = await phone.command("spawn", {"key": SEAT, "shell": "sh"}, reply_to=2)
    assert unknown is not None
    assert "shell" in unknown["why"]
    spawned = await spawn(phone, worktree="../web-feature")
    assert spawned["cwd"] == str(tree.resolve())
    twice = await phone.command("spawn", {"key": SEAT}, reply_to=3)
    assert twice == {
        "ok": False,
        "why": "seat acme/web/main already has an agent (despawn it first)",
    }
    gone = await phone.command("despawn", {"key": SEAT}, reply_to=4)
    assert gone is not None
    assert (gone["ok"], gone["key"]) == (True, SEAT)
    await phone.first(
        lambda f: update("seat_changed")(f) and body(f)["row"]["lifecycle"] == "stopped"
    )
    after = await phone.ask(
        {"kind": "command", "command": {"prompt": {"key": SEAT, "text": "Hello?"}}},
        lambda f: f["kind"] == "error",
    )
    assert after["why"] == "seat acme/web/main has no agent (spawn one first)"


async def test_a_question_is_answered_with_a_chosen_option(
    agent_supervisor: AgentSupervisor,
) -> None:
    question = {"question": "Which colour?", "header": "Colour", "options": ["Red", "Blue"]}
    server, supervised, _ = await agent_supervisor(
        {"ask": question}, {"when": {"tool_result": "AskUserQuestion"}, "say": "Blue it is."}
    )
    phone = await reader(supervised, answering=True)
    await spawn(phone)
    await hold_session(phone)
    await phone.command("prompt", {"key": SEAT, "text": "Pick a colour."})
    card = body(await phone.first(update("ask_pending")))["ask"]
    assert card["kind"] == "question"
    [asked] = card["questions"]
    assert (asked["question"], [o["label"] for o in asked["options"]]) == (
        "Which colour?",
        ["Red", "Blue"],
    )
    home_row = await phone.first(
        lambda f: update("seat_changed")(f) and body(f)["row"]["waiting"] is not None
    )
    assert body(home_row)["row"]["waiting"]["kind"] == "question"
    wrong = await phone.ask(
        {
            "kind": "command",
            "command": {"answer": {"key": SEAT, "id": card["id"], "answer": "allow_once"}},
        },
        lambda f: f["kind"] == "error",
    )
    assert wrong["why"] == f"ask {card['id']} is a question: answer it with choose"
    choice = {"choose": {"answers": {"Which colour?": ["Blue"]}}}
    await phone.command("answer", {"key": SEAT, "id": card["id"], "answer": choice})
    await phone.first(ended)
    said = [m["msg"] for m in updates(phone, "chat_appended") if m["msg"]["type"] == "result"]
    assert said[-1]["text"] == "Blue it is."
    [result] = tool_results(server.message_requests()[1].body)
    assert "Blue" in result.text


async def test_a_prompt_sent_during_a_turn_is_queued_for_every_view(
    agent_supervisor: AgentSupervisor,
) -> None:
    server, supervised, _ = await agent_supervisor(
        {"say": "The first answer, slowly.", "stall": {"after": 1}},
        {"when": {"user_text": "Second question."}, "say": "The second answer."},
    )
    phone, desk = await reader(supervised), await reader(supervised)
    await spawn(phone)
    await hold_session(phone)
    await phone.command("prompt", {"key": SEAT, "text": "First question."})
    await server.wait_stalled()
    await desk.command("prompt", {"key": SEAT, "text": "Second question."})
    queued = body(await phone.first(update("prompt_queued")))["prompt"]
    assert (queued["text"], queued["source"]) == ("Second question.", "composer")
    late = await hold_session(desk)
    assert late["state"]["queue"] == [queued]
    assert len(server.message_requests()) == 1, "the queued prompt is not sent yet"
    server.release()
    await phone.first(lambda f: ended(f) and body(f)["uuid"] == queued["uuid"])
    phases = [(m["uuid"] == queued["uuid"], m["phase"]) for m in updates(phone, "prompt_lifecycle")]
    assert phases == [(False, "started"), (False, "ended"), (True, "started"), (True, "ended")]
    assert (await hold_session(desk))["state"]["queue"] == []
