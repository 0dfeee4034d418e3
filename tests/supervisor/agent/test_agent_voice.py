"""An agent seat's voice through a real `forge supervise`, the real Claude Code CLI and the
scripted model: `mcp__forge__voice__say` reaches a listener as audio, the `[Voice]` notes reach
the agent, hostile say text is spoken as cleaned words, and a dictation take stopped with `send`
lands as a prompt the model receives."""

from __future__ import annotations

import base64
import math
from array import array
from pathlib import Path
from typing import Any

import pytest

from forge.testing.model_conversation import tool_results
from forge.testing.model_server import ModelServer
from forge.workers.agent.voice import QUALIFIED_NAME, spoken_line
from forge.workers.dictate import corpus
from forge.workers.dictate.tts import Speaker
from tests.dictate.harness import Client
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

pytestmark = pytest.mark.timeout(900)

SPEECH = "[tts]\nenabled = true\n"
DICTATION = "[dictate]\nenabled = true\n"
LISTENING = "[Voice] The person is listening"
STOPPED = "[Voice] The person stopped listening"


def say(text: str, when: str) -> dict[str, Any]:
    """A turn answering the prompt containing `when` with a `voice__say` call."""
    return {"when": {"user_text": when}, "tool": {"name": QUALIFIED_NAME, "input": {"text": text}}}


def after_say(text: str) -> dict[str, Any]:
    return {"when": {"tool_result": QUALIFIED_NAME}, "say": text}


def rms(pcm: bytes) -> float:
    samples = array("h", pcm)
    return math.sqrt(sum(s * s for s in samples) / max(len(samples), 1)) / 32768


def clips(connection: Reader) -> list[Frame]:
    return [f for f in connection.frames if f["kind"] == "voice_audio"]


def said_to_model(server: ModelServer) -> list[str]:
    """What `voice__say` answered the model, in order."""
    return [
        result.text
        for request in server.message_requests()
        for result in tool_results(request.body)
        if result.tool_name == QUALIFIED_NAME
    ]


async def turn(connection: Reader, text: str) -> None:
    """Prompt the seat and wait for that prompt's end."""
    mark = len(connection.frames)
    await connection.command("prompt", {"key": SEAT, "text": text})
    await connection.first(ended, mark)


async def voice(connection: Reader, on: bool, listeners: int) -> None:
    await connection.ask(
        {"kind": "voice_mode", "key": SEAT, "on": on, "explicit": True},
        lambda f: f["kind"] == "voice_mode_state" and f["listeners"] == listeners,
    )


async def test_voice_say_reaches_the_listener_as_audio_and_the_notes_reach_the_agent(
    agent_supervisor: AgentSupervisor,
) -> None:
    server, supervised, _ = await agent_supervisor(
        {"when": {"user_text": LISTENING}, "say": "I will speak my updates."},
        say("The build is green.", "Status please"),
        after_say("Said it."),
        {"when": {"user_text": STOPPED}, "say": "I will stop speaking."},
        say("Nobody hears this.", "Again please"),
        after_say("Said nothing."),
        config=SPEECH,
    )
    phone, desk = await reader(supervised), await reader(supervised)
    lurker = await reader(supervised)
    await phone.ask({"kind": "drill_start_seat", "seat": SEAT}, lambda f: f["kind"] == "drill_done")
    await hold_session(phone)
    await hold_session(desk)
    await voice(phone, True, 1)  # someone listens before the agent comes
    await spawn(phone)
    await phone.first(ended)  # the listening note ran as a turn of its own
    [note] = [m["msg"] for m in updates(phone, "chat_appended") if m["msg"]["type"] == "user"]
    assert note["text"].startswith(LISTENING)
    assert (await hold_session(desk))["state"]["voice_listeners"] == 1

    await turn(phone, "Status please")
    clip = await phone.first(lambda f: f["kind"] == "voice_audio")
    assert clip["key"] == SEAT
    assert rms(base64.b64decode(clip["pcm"])) > 0.01, "the clip is speech, not silence"
    assert said_to_model(server) == ["spoken to 1 listener"]
    assert clips(lurker) == [], "a connection that neither listens nor holds the seat hears none"
    tool_calls = [
        block
        for m in updates(phone, "chat_appended")
        if m["msg"]["type"] == "assistant"
        for block in m["msg"]["blocks"]
        if block["type"] == "tool_use"
    ]
    assert [c["name"] for c in tool_calls] == [QUALIFIED_NAME]
    assert updates(phone, "ask_pending") == [], "forge's own tool runs without an ask"

    mark = len(phone.frames)
    await voice(phone, False, 0)
    await phone.first(ended, mark)  # the stopped note, sent as the last listener left
    assert any(STOPPED in str(r.body) for r in server.message_requests())
    assert (await hold_session(desk))["state"]["voice_listeners"] == 0
    heard = len(clips(phone))
    await turn(phone, "Again please")
    assert said_to_model(server)[-1] == "no one is listening: nothing was spoken"
    assert len(clips(phone)) == heard, "nothing is rendered for a seat nobody listens to"
    assert clips(lurker) == []


async def test_hostile_say_text_is_bounded_cleaned_and_spoken_as_words(
    agent_supervisor: AgentSupervisor, tmp_path: Path
) -> None:
    """The attack: a model (steered by what it read) calls voice__say with a megabyte, control
    characters and terminal escapes, and shell text that would run if the line ever reached a
    shell. The clip is exactly espeak-ng's rendering of the cleaned, cut line; nothing runs."""
    marker = tmp_path / "pwned"
    hostile = (
        f"Deploy $(touch {marker}) `touch {marker}`; echo x > {marker} \x00\x07\x1b[31mred"
        f"\x1b]0;title\x07 -f/etc/passwd [[h@l]] done. " + "word " * 210_000
    )
    assert len(hostile) > 1_000_000
    server, supervised, _ = await agent_supervisor(
        {"when": {"user_text": LISTENING}, "say": "Listening."},
        say(hostile, "Read it out"),
        after_say("Done."),
        config=SPEECH,
        chunk=1 << 20,
    )
    phone = await reader(supervised)
    await spawn(phone)
    await hold_session(phone)
    mark = len(phone.frames)
    await voice(phone, True, 1)
    await phone.first(ended, mark)
    await turn(phone, "Read it out")
    clip = await phone.first(lambda f: f["kind"] == "voice_audio")
    expected = spoken_line(hostile)
    assert expected.cut
    assert len(expected.text) == 1000
    assert "\x1b" not in expected.text
    assert "\x00" not in expected.text
    assert base64.b64decode(clip["pcm"]) == (await Speaker().render(expected.text)).pcm
    [answer] = said_to_model(server)
    assert answer.startswith("spoken to 1 listener (only the first 1000 characters")
    assert not marker.exists(), "the line is words, never a shell's input"


async def test_a_dictation_take_stopped_with_send_lands_as_a_prompt(
    agent_supervisor: AgentSupervisor,
) -> None:
    server, supervised, _ = await agent_supervisor(
        {"when": {"user_text": "terminal"}, "say": "Running them now."}, config=DICTATION
    )
    phone, desk = await reader(supervised), await reader(supervised)
    clip = {c.name: c for c in corpus.load()}["espeak-us-1"]
    talker = await Client.open(supervised.url)

    mark = len(talker.frames)
    await talker.send({"kind": "dictate_stream", "key": SEAT, "surface": "composer"})
    await talker.stream(clip.samples()[:6400], pace=None)
    await talker.send({"kind": "dictate_stop", "key": SEAT, "send": True})
    refused = await talker.next_of_kind("error", after=mark)
    assert (refused["what"], refused["seat"]) == ("dictate_stop", SEAT)
    assert "has no agent" in refused["why"]
    await talker.send({"kind": "dictate_cancel", "key": SEAT})
    await talker.next_of_kind("dictate_failed", after=mark)

    await spawn(phone)
    await hold_session(phone)
    await hold_session(desk)
    mark = len(talker.frames)
    await talker.send({"kind": "dictate_stream", "key": SEAT, "surface": "review"})
    await talker.send({"kind": "dictate_stop", "key": SEAT, "send": True})
    refused = await talker.next_of_kind("error", after=mark)
    assert "composer" in refused["why"]
    await talker.send({"kind": "dictate_cancel", "key": SEAT})
    await talker.next_of_kind("dictate_failed", after=mark)

    landed = await talker.take(clip.samples(), pace=None, seat=SEAT, send=True)
    assert landed["kind"] == "dictate_ended", landed
    assert "terminal" in landed["text"].lower()
    assert landed["prompt"] is not None
    for view in (phone, desk):
        await view.first(ended)
        [user] = [m["msg"] for m in updates(view, "chat_appended") if m["msg"]["type"] == "user"]
        assert (user["uuid"], user["text"]) == (landed["prompt"], landed["text"])
    started = next(
        body(f)
        for f in phone.frames
        if update("prompt_lifecycle")(f) and body(f)["phase"] == "started"
    )
    assert started["uuid"] == landed["prompt"]
    [request] = server.message_requests()
    assert landed["text"] in str(request.body)
    await talker.close()
