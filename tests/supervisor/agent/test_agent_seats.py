"""Three agent seats on one real `forge supervise`, each its own worker and Claude Code CLI
against one scripted model: prompts sent to all three at once each get their own seat's answer,
and a worker killed mid-turn fails only its own turn while the other two complete, then comes
back with its session resumed."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from tests.supervisor.agent.conftest import (
    AgentSupervisor,
    Frame,
    Reader,
    body,
    reader,
    spawn,
    update,
    updates,
)

pytestmark = pytest.mark.timeout(900)

LABELS = ("one", "two", "three")
SEATS = {label: {"org": "acme", "project": "web", "label": label} for label in LABELS}


def ended_on(label: str, since_prompt: str) -> Any:
    """The end of the turn on seat `label` whose prompt's uuid the reader saw for `since_prompt`."""
    return lambda f: update("prompt_lifecycle")(f) and body(f)["key"] == SEATS[label] and (
        body(f)["phase"] == "ended"
    ) and body(f)["uuid"] == since_prompt  # fmt: skip


async def prompt_uuid(connection: Reader, label: str, text: str) -> str:
    """The uuid of the prompt `text` on seat `label`, once its user message was appended."""
    frame = await connection.first(
        lambda f: (
            update("chat_appended")(f)
            and body(f)["key"] == SEATS[label]
            and body(f)["msg"]["type"] == "user"
            and body(f)["msg"]["text"] == text
        )
    )
    return str(body(frame)["msg"]["uuid"])


def row_of(label: str, lifecycle: str) -> Any:
    """Home's row of seat `label` in `lifecycle`."""
    return lambda f: update("seat_changed")(f) and body(f)["row"]["slot"] == SEATS[label] and (
        body(f)["row"]["lifecycle"] == lifecycle
    )  # fmt: skip


async def hold(connection: Reader, label: str) -> Frame:
    what = {"session": SEATS[label]}
    snapshot = await connection.ask(
        {"kind": "subscribe", "what": what},
        lambda f: f["kind"] == "snapshot" and f["subject"] == what,
    )
    data: Frame = snapshot["data"]
    return data


def said_on(connection: Reader, label: str) -> list[str]:
    """Every text the agent streamed on seat `label` (its deltas joined per message)."""
    messages = [m for m in updates(connection, "chat_appended") if m["key"] == SEATS[label]]
    return [m["msg"]["text"] for m in messages if m["msg"]["type"] == "result"]


async def prompt_all(connection: Reader, round_name: str) -> dict[str, str]:
    """Send every seat its prompt of `round_name` at once; each prompt's uuid."""
    texts = {label: f"Seat {label}, {round_name}." for label in LABELS}
    for label, text in texts.items():
        await connection.command("prompt", {"key": SEATS[label], "text": text})
    return {label: await prompt_uuid(connection, label, text) for label, text in texts.items()}


async def test_three_seats_answer_apart_and_one_killed_worker_leaves_the_others_working(
    agent_supervisor: AgentSupervisor,
) -> None:
    turns: list[dict[str, Any]] = []
    for label in LABELS:
        turns.append({"when": {"user_text": f"Seat {label}, first."}, "say": f"First for {label}."})
        turns.append(
            {
                "when": {"user_text": f"Seat {label}, second."},
                "say": f"Second for {label}, held mid-stream.",
                "stall": {"after": 1},
            }
        )
    turns.append({"when": {"user_text": "Seat one, again."}, "say": "Back for one."})
    server, supervised, _ = await agent_supervisor(*turns)
    desk = await reader(supervised)
    for label in LABELS:
        await spawn(desk, key=SEATS[label])
        await hold(desk, label)

    first = await prompt_all(desk, "first")
    for label, uuid in first.items():
        assert body(await desk.first(ended_on(label, uuid)))["outcome"] == "completed"
    for label in LABELS:
        assert said_on(desk, label) == [f"First for {label}."], "only its own seat's answer"

    second = await prompt_all(desk, "second")
    await server.wait_for(
        lambda: sum(r.outcome == "stalled" for r in server.message_requests()) == len(LABELS)
    )
    killed = await supervised.record("worker_spawned", kind="agent", worker="agent:acme/web/one")
    os.kill(killed["pid"], signal.SIGKILL)
    assert body(await desk.first(ended_on("one", second["one"])))["outcome"] == "failed"
    server.release()
    for label in ("two", "three"):
        assert body(await desk.first(ended_on(label, second[label])))["outcome"] == "completed"
        assert said_on(desk, label) == [
            f"First for {label}.",
            f"Second for {label}, held mid-stream.",
        ]
    crashed = await desk.first(row_of("one", "crashed"))
    await desk.first(row_of("one", "idle"), desk.frames.index(crashed))
    await desk.command("prompt", {"key": SEATS["one"], "text": "Seat one, again."})
    again = await prompt_uuid(desk, "one", "Seat one, again.")
    assert body(await desk.first(ended_on("one", again)))["outcome"] == "completed"
    assert said_on(desk, "one") == ["First for one.", "Back for one."]
    turns_of_one = (await hold(desk, "one"))["conversation"]["turns"]
    prompts = [t["messages"][0]["text"] for t in turns_of_one if t["messages"][0]["type"] == "user"]
    assert prompts[0] == "Seat one, first.", "the resumed session kept its first turn"
    assert prompts[-1] == "Seat one, again."
    for label in ("two", "three"):
        kept = (await hold(desk, label))["conversation"]["turns"]
        assert [t["messages"][0]["text"] for t in kept] == [
            f"Seat {label}, first.",
            f"Seat {label}, second.",
        ]
