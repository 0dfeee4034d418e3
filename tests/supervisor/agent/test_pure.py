"""The agent seat's pure parts: transcript rows into turns and pages, worker events into seat
updates (prompt uuids bound in submission order), and answers checked against their ask."""

from __future__ import annotations

import typing
from typing import Any

import pytest

from forge.supervisor.agent.conversation import messages_of, page
from forge.supervisor.agent.seat import AgentSeat, decision_of
from forge.wire import agent as wire
from forge.wire.seats import Seat
from forge.workers.agent import protocol as worker

KEY = Seat("acme", "web", "main")


def prompt_row(text: str, uuid: str) -> dict[str, Any]:
    return {"type": "user", "uuid": uuid, "message": {"role": "user", "content": text}}


def said_row(text: str) -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {"id": "msg", "content": [{"type": "text", "text": text}]},
    }


def call_row(call_id: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "ls"}}
    return {"type": "assistant", "message": {"id": "msg", "content": [block]}}


def result_row(call_id: str) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": "a\nb", "is_error": False}
    return {"type": "user", "message": {"role": "user", "content": [block]}}


TRANSCRIPT = [
    {"type": "summary", "summary": "nothing"},
    prompt_row("one", "u1"),
    said_row("first"),
    prompt_row("two", "u2"),
    call_row("toolu_1"),
    result_row("toolu_1"),
    said_row("second"),
    {"type": "user", "isMeta": True, "message": {"role": "user", "content": "caveat"}},
    {
        "type": "assistant",
        "isSidechain": True,
        "message": {"content": [{"type": "text", "text": "sub"}]},
    },
    prompt_row("three", "u3"),
    said_row("third"),
]


def test_a_tool_result_stays_in_the_turn_of_its_call() -> None:
    turns, cursor = page(messages_of(TRANSCRIPT), None, 20)
    assert cursor is None
    assert [turn.key for turn in turns] == ["u1", "u2", "u3"]
    assert [type(m).__name__ for m in turns[1].messages] == [
        "UserMessage", "AssistantMessage", "ToolResultMessage", "AssistantMessage",
    ]  # fmt: skip
    assert turns[1].messages[2] == wire.ToolResultMessage(
        tool_use_id="toolu_1", is_error=False, text="a\nb"
    )


def test_pages_walk_back_to_the_first_turn_and_end_with_a_null_cursor() -> None:
    rows = messages_of(TRANSCRIPT)
    newest, cursor = page(rows, None, 1)
    assert [turn.key for turn in newest] == ["u3"]
    middle, cursor = page(rows, cursor, 1)
    assert [turn.key for turn in middle] == ["u2"]
    first, cursor = page(rows, cursor, 1)
    assert [turn.key for turn in first] == ["u1"]
    assert cursor is None
    assert page(rows, 0, 5) == ([], None)


def test_prompts_are_bound_to_their_uuids_in_the_order_they_were_sent() -> None:
    seat = AgentSeat(key=KEY, cwd="/w")
    first, second = seat.submit("one", "composer"), seat.submit("two", "cli")
    seat.apply(worker.PromptLifecycle(prompt_id=1, phase="started", text="one"))
    queued = seat.apply(worker.PromptLifecycle(prompt_id=2, phase="queued", text="two"))
    assert queued == [
        (
            "prompt_queued",
            {"key": KEY, "prompt": wire.QueuedPrompt(uuid=second, source="cli", text="two")},
        )
    ]
    assert [row.uuid for row in seat.queue] == [second]
    ended = seat.apply(
        worker.PromptLifecycle(prompt_id=1, phase="ended", text="one", outcome="completed")
    )
    assert ended[0] == (
        "prompt_lifecycle",
        {"key": KEY, "uuid": first, "phase": "ended", "outcome": "completed"},
    )
    seat.apply(worker.PromptLifecycle(prompt_id=2, phase="started", text="two"))
    assert seat.queue == []
    assert seat.turn_in_flight


def test_a_lost_worker_ends_its_prompts_and_withdraws_its_asks() -> None:
    seat = AgentSeat(key=KEY, cwd="/w")
    running = seat.submit("one", "composer")
    seat.apply(worker.PromptLifecycle(prompt_id=1, phase="started", text="one"))
    seat.apply(worker.PermissionAsk(ask_id="toolu_1", tool_name="Bash", input={"command": "ls"}))
    assert seat.waiting() == {"kind": "permission", "id": "toolu_1", "behind": 0}
    assert seat.home_lifecycle() == "waiting"
    lost = seat.worker_lost("it died")
    assert (
        "prompt_lifecycle",
        {"key": KEY, "uuid": running, "phase": "ended", "outcome": "failed"},
    ) in lost
    assert ("ask_resolved", {"key": KEY, "id": "toolu_1", "outcome": "withdrawn"}) in lost
    assert (seat.lifecycle, seat.waiting(), seat.turn_in_flight) == ("crashed", None, False)


PERMISSION = wire.PermissionCard(
    id="toolu_1", tool_name="Bash", input={}, title=None, decision_reason=None
)
QUESTION = wire.QuestionCard(id="toolu_2", questions=[])


@pytest.mark.parametrize(
    ("answer", "card", "why"),
    [
        (
            {"choose": {"answers": {}}},
            PERMISSION,
            "is a permission ask: answer it with allow or deny",
        ),
        ("allow_once", QUESTION, "is a question: answer it with choose"),
        ({"deny": {}}, PERMISSION, "deny"),
        ({"deny": {"reason": ""}}, PERMISSION, "deny"),
        ({"erase": {}}, PERMISSION, "is none of allow_once, allow_always, deny, choose"),
        ("yes", PERMISSION, 'answer is "allow_once"'),
    ],
)
def test_an_answer_that_does_not_fit_its_ask_is_refused_by_name(
    answer: Any, card: wire.AskCard, why: str
) -> None:
    with pytest.raises(ValueError, match=why):
        decision_of(answer, card)


def test_answers_become_the_workers_decisions() -> None:
    assert decision_of("allow_once", PERMISSION) == worker.AllowOnce()
    assert decision_of("allow_always", PERMISSION) == worker.AllowAlways()
    assert decision_of({"deny": {"reason": "no"}}, PERMISSION) == worker.Deny(reason="no")
    assert decision_of({"choose": {"answers": {"Q?": ["A"]}}}, QUESTION) == worker.Choose(
        answers={"Q?": ["A"]}
    )


def test_the_wire_names_the_permission_modes_the_worker_takes() -> None:
    assert typing.get_args(wire.PermissionMode) == typing.get_args(worker.PermissionMode)
