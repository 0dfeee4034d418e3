"""A seat's turns through the agent worker: streamed text, permission asks, questions, interrupts
and the prompt queue, with the real CLI against the scripted model server."""

from __future__ import annotations

import pytest

from forge.ipc.errors import RequestFailed
from forge.testing.model_conversation import tool_results, user_text
from forge.testing.model_server import ModelServer
from forge.workers.agent.protocol import (
    AllowAlways,
    AllowOnce,
    Answer,
    AskEnded,
    AssistantMessage,
    Choose,
    Delta,
    Deny,
    GetContextUsage,
    Interrupt,
    PermissionAsk,
    Prompt,
    PromptLifecycle,
    QuestionAsk,
    Result,
    SetModel,
    SetPermissionMode,
    TextBlock,
    ToolResult,
    ToolUseBlock,
)
from tests.workers.agent.conftest import MakeSeat, ended, script

pytestmark = pytest.mark.timeout(300)


async def test_a_turn_streams_its_text_in_order_then_its_usage_and_cost(
    make_seat: MakeSeat,
) -> None:
    text = "Hello from the scripted model, in several deltas."
    usage = {"input_tokens": 1234, "output_tokens": 56}
    async with ModelServer(script({"say": text, "usage": usage})) as server:
        seat = make_seat(server)
        await seat.start()
        accepted = await seat.call(Prompt(text="Say hello."))
        end = await seat.next(PromptLifecycle, ended(accepted.prompt_id))
        await seat.stop()
    assert accepted.queued == 0
    assert end.outcome == "completed"
    deltas = [event.text for event in seat.of(Delta) if event.kind == "text"]
    assert len(deltas) > 1
    assert "".join(deltas) == text
    order = [
        type(event).__name__
        for event in seat.events
        if isinstance(event, PromptLifecycle | Delta | AssistantMessage | Result)
    ]
    first_delta, last_delta = order.index("Delta"), len(order) - 1 - order[::-1].index("Delta")
    assert order[0] == "PromptLifecycle"
    assert set(order[first_delta : last_delta + 1]) == {"Delta"}
    assert order[last_delta + 1 :] == ["AssistantMessage", "Result", "PromptLifecycle"]
    [said] = seat.of(AssistantMessage)
    assert said.blocks == [TextBlock(text)]
    [result] = seat.of(Result)
    assert (result.subtype, result.is_error, result.text) == ("success", False, text)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (1234, 56)
    assert result.cost_usd is not None
    assert result.cost_usd > 0
    assert "Say hello." in user_text(server.message_requests()[0].body)


async def test_a_bash_call_waits_on_its_ask_and_runs_once_allowed(make_seat: MakeSeat) -> None:
    played = script(
        {"bash": "echo hi > f.txt && echo made it"},
        {"when": {"tool_result": "Bash"}, "say": "Done."},
    )
    async with ModelServer(played) as server:
        seat = make_seat(server)
        await seat.start()
        accepted = await seat.call(Prompt(text="Make f.txt."))
        ask = await seat.next(PermissionAsk)
        assert ask.tool_name == "Bash"
        assert ask.input["command"] == "echo hi > f.txt && echo made it"
        assert not (seat.work / "f.txt").exists(), "the call is held until answered"
        assert len(server.message_requests()) == 1
        await seat.call(Answer(ask_id=ask.ask_id, decision=AllowOnce()))
        await seat.next(PromptLifecycle, ended(accepted.prompt_id))
        with pytest.raises(RequestFailed) as again:
            await seat.call(Answer(ask_id=ask.ask_id, decision=AllowOnce()))
        await seat.stop()
    assert again.value.code == "unknown_ask"
    assert (seat.work / "f.txt").read_text() == "hi\n"
    [call] = [b for m in seat.of(AssistantMessage) for b in m.blocks if isinstance(b, ToolUseBlock)]
    assert call.id == ask.ask_id
    [result] = seat.of(ToolResult)
    assert (result.tool_use_id, result.is_error) == (ask.ask_id, False)
    assert "made it" in result.text
    assert seat.of(AskEnded) == [AskEnded(ask_id=ask.ask_id, outcome="answered")]
    assert seat.of(Result)[-1].text == "Done."


async def test_a_denial_reaches_the_model_with_its_reason(make_seat: MakeSeat) -> None:
    played = script(
        {"bash": "echo hi > f.txt"},
        {"when": {"tool_result": "Bash", "tool_error": True}, "say": "Understood."},
    )
    async with ModelServer(played) as server:
        seat = make_seat(server)
        await seat.start()
        accepted = await seat.call(Prompt(text="Make f.txt."))
        ask = await seat.next(PermissionAsk)
        with pytest.raises(RequestFailed) as misfit:
            await seat.call(Answer(ask_id=ask.ask_id, decision=Choose(answers={"x": ["y"]})))
        await seat.call(Answer(ask_id=ask.ask_id, decision=Deny(reason="no files today")))
        await seat.next(PromptLifecycle, ended(accepted.prompt_id))
        await seat.stop()
    assert misfit.value.code == "wrong_answer"
    assert not (seat.work / "f.txt").exists()
    [denied] = tool_results(server.message_requests()[1].body)
    assert denied.is_error
    assert "no files today" in denied.text
    assert seat.of(Result)[-1].text == "Understood."


async def test_a_question_is_answered_with_a_chosen_option(make_seat: MakeSeat) -> None:
    question = {"question": "Which colour?", "header": "Colour", "options": ["Red", "Blue"]}
    played = script(
        {"ask": question}, {"when": {"tool_result": "AskUserQuestion"}, "say": "Blue it is."}
    )
    async with ModelServer(played) as server:
        seat = make_seat(server)
        await seat.start()
        accepted = await seat.call(Prompt(text="Pick a colour."))
        ask = await seat.next(QuestionAsk)
        [asked] = ask.questions
        assert asked.question == "Which colour?"
        assert [option.label for option in asked.options] == ["Red", "Blue"]
        refusals = []
        for wrong in (AllowOnce(), Choose(answers={"Which colour?": ["Red", "Blue"]})):
            with pytest.raises(RequestFailed) as refused:
                await seat.call(Answer(ask_id=ask.ask_id, decision=wrong))
            refusals.append(refused.value.code)
        await seat.call(Answer(ask_id=ask.ask_id, decision=Choose({"Which colour?": ["Blue"]})))
        await seat.next(PromptLifecycle, ended(accepted.prompt_id))
        await seat.stop()
    assert refusals == ["wrong_answer", "wrong_answer"]
    [answered] = tool_results(server.message_requests()[1].body)
    assert not answered.is_error
    assert "Blue" in answered.text
    assert seat.of(Result)[-1].text == "Blue it is."


async def test_an_interrupt_mid_stream_ends_the_turn_and_the_seat_goes_on(
    make_seat: MakeSeat,
) -> None:
    played = script(
        {"say": "A long answer that will not finish.", "stall": {"after": 2}},
        {"when": {"user_text": "Go on."}, "say": "Going on."},
    )
    async with ModelServer(played) as server:
        seat = make_seat(server)
        await seat.start()
        first = await seat.call(Prompt(text="Talk for a while."))
        held = await server.wait_stalled()
        await seat.next(Delta)
        assert (await seat.call(Interrupt())).interrupted
        cut = await seat.next(PromptLifecycle, ended(first.prompt_id))
        await server.wait_for(lambda: held.outcome != "stalled")
        second = await seat.call(Prompt(text="Go on."))
        after = await seat.next(PromptLifecycle, ended(second.prompt_id))
        assert not (await seat.call(Interrupt())).interrupted, "nothing runs now"
        await seat.stop()
    assert cut.outcome == "interrupted"
    assert held.outcome == "left"
    assert after.outcome == "completed"
    assert seat.of(Result)[-1].text == "Going on."


async def test_a_prompt_sent_during_a_turn_waits_for_it(make_seat: MakeSeat) -> None:
    played = script(
        {"say": "The first answer, slowly.", "stall": {"after": 1}},
        {"when": {"user_text": "Second question."}, "say": "The second answer."},
    )
    async with ModelServer(played) as server:
        seat = make_seat(server)
        await seat.start()
        first = await seat.call(Prompt(text="First question."))
        await server.wait_stalled()
        second = await seat.call(Prompt(text="Second question."))
        assert second.queued == 1
        await seat.next(PromptLifecycle, lambda e: e.phase == "queued")
        assert len(server.message_requests()) == 1, "the queued prompt is not sent yet"
        server.release()
        await seat.next(PromptLifecycle, ended(second.prompt_id))
        await seat.stop()
    lifecycle = [(e.prompt_id, e.phase) for e in seat.of(PromptLifecycle)]
    assert lifecycle == [
        (first.prompt_id, "started"),
        (second.prompt_id, "queued"),
        (first.prompt_id, "ended"),
        (second.prompt_id, "started"),
        (second.prompt_id, "ended"),
    ]
    one, two = server.message_requests()
    assert "Second question." not in user_text(one.body)
    assert "Second question." in user_text(two.body)
    assert [result.text for result in seat.of(Result)] == [
        "The first answer, slowly.",
        "The second answer.",
    ]


async def test_an_interrupt_withdraws_a_pending_ask_and_the_call_never_runs(
    make_seat: MakeSeat,
) -> None:
    played = script({"bash": "echo hi > f.txt"}, {"say": "unreached"})
    async with ModelServer(played) as server:
        seat = make_seat(server)
        await seat.start()
        accepted = await seat.call(Prompt(text="Make f.txt."))
        ask = await seat.next(PermissionAsk)
        assert (await seat.call(Interrupt())).interrupted
        cut = await seat.next(PromptLifecycle, ended(accepted.prompt_id))
        await seat.next(AskEnded)
        with pytest.raises(RequestFailed) as late:
            await seat.call(Answer(ask_id=ask.ask_id, decision=AllowOnce()))
        await seat.stop()
    assert cut.outcome == "interrupted"
    assert seat.of(AskEnded) == [AskEnded(ask_id=ask.ask_id, outcome="withdrawn")]
    assert late.value.code == "unknown_ask"
    assert not (seat.work / "f.txt").exists()
    assert len(server.message_requests()) == 1


async def test_allow_always_applies_the_clis_suggestion_so_the_same_call_is_not_asked_again(
    make_seat: MakeSeat,
) -> None:
    command = "sh -c 'echo again'"
    played = script(
        {"bash": command},
        {"when": {"tool_result": "Bash"}, "bash": command},
        {"when": {"tool_result": "Bash"}, "say": "Twice."},
    )
    async with ModelServer(played) as server:
        seat = make_seat(server)
        await seat.start()
        accepted = await seat.call(Prompt(text="Echo twice."))
        ask = await seat.next(PermissionAsk)
        await seat.call(Answer(ask_id=ask.ask_id, decision=AllowAlways()))
        await seat.next(PromptLifecycle, ended(accepted.prompt_id))
        await seat.stop()
    assert ask.suggestions, "the CLI suggests a rule for the command"
    assert [a.ask_id for a in seat.of(PermissionAsk)] == [ask.ask_id]
    assert [r.text for r in seat.of(ToolResult)] == ["again", "again"]
    # The CLI's suggestion keeps the rule in the seat's own .claude/settings.local.json.
    assert command in (seat.work / ".claude" / "settings.local.json").read_text()
    assert seat.of(Result)[-1].text == "Twice."


async def test_mode_model_and_context_usage_change_and_read_the_running_session(
    make_seat: MakeSeat,
) -> None:
    async with ModelServer(script({"say": "unused"})) as server:
        seat = make_seat(server)
        target = seat.work / "made.txt"
        server.script = script(
            {
                "when": {"user_text": "Write it."},
                "write": {"file_path": str(target), "content": "unasked\n"},
            },
            {"when": {"tool_result": "Write"}, "say": "Written."},
            {"say": "Hi."},  # the CLI tries a model it does not know with a "Hi" of its own
        )
        await seat.start(model="claude-forge-first")
        with pytest.raises(RequestFailed) as refused:
            await seat.call(SetPermissionMode(mode="bypassPermissions"))
        await seat.call(SetPermissionMode(mode="acceptEdits"))
        await seat.call(SetModel(model="claude-forge-second"))
        accepted = await seat.call(Prompt(text="Write it."))
        await seat.next(PromptLifecycle, ended(accepted.prompt_id))
        usage = await seat.call(GetContextUsage())
        await seat.stop()
    assert refused.value.code == "cli_refused"
    assert "bypassPermissions" in refused.value.message
    assert seat.of(PermissionAsk) == [], "acceptEdits writes without an ask"
    assert target.read_text() == "unasked\n"
    assert {r.body["model"] for r in server.message_requests()} == {"claude-forge-second"}
    assert seat.of(Result)[-1].text == "Written."
    assert usage.model == "claude-forge-second"
    assert usage.total_tokens > 0
    assert usage.categories
