"""The Agent pane's voice in a real browser, against a real `forge supervise` with dictation and
speech on, the real Claude Code CLI and the scripted model server: Chromium's fake microphone
speaks a corpus sentence into the composer and "Stop & send" makes it the agent's prompt; with the
seat's voice on, the agent's `mcp__forge__voice__say` plays on the page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, expect

from forge.testing.model_conversation import user_text
from forge.testing.model_thread import ModelServerThread
from forge.workers.agent.voice import QUALIFIED_NAME
from forge.workers.dictate.wer import score

from .agentkit import AGENT_MS, agent_project, agent_supervised, idle, prompt, said, start_agent
from .conftest import DESKTOP, PHONE, Supervised, chromium, poll
from .fakemic import DECODE_MS, DICTATION, LEAD_S, fake_mic_args, padded_sentence

pytest.importorskip("claude_agent_sdk")
pytestmark = pytest.mark.timeout(900)

LISTENING = "[Voice] The person is listening"


@pytest.fixture(scope="module")
def sentence(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, float]:
    return padded_sentence(tmp_path_factory.mktemp("mic"))


@pytest.fixture(scope="module")
def browser(sentence: tuple[Path, str, float]) -> Iterator[Browser]:
    """Chromium whose microphone is the padded sentence, granted without asking."""
    with chromium(fake_mic_args(sentence[0])) as launched:
        yield launched


@pytest.fixture(scope="module")
def model() -> Iterator[ModelServerThread]:
    with ModelServerThread() as server:
        yield server


@pytest.fixture(scope="module")
def supervised(
    tmp_path_factory: pytest.TempPathFactory, model: ModelServerThread
) -> Iterator[Supervised]:
    """`forge supervise` with dictation and speech on, its agents pointed at the model server."""
    root = tmp_path_factory.mktemp("agentvoice")
    server = agent_supervised(root, model, agent_project(root), extra=DICTATION)
    server.start()
    yield server
    server.stop()


def context(browser: Browser, supervised: Supervised, shape: dict[str, Any]) -> BrowserContext:
    made = browser.new_context(**shape)
    made.grant_permissions(["microphone"])
    supervised.pair(made)
    return made


@pytest.fixture
def phone(browser: Browser, supervised: Supervised) -> Iterator[BrowserContext]:
    made = context(browser, supervised, PHONE)
    yield made
    made.close()


@pytest.fixture
def desktop(browser: Browser, supervised: Supervised) -> Iterator[BrowserContext]:
    made = context(browser, supervised, DESKTOP)
    yield made
    made.close()


def test_a_dictation_take_stopped_with_send_lands_as_the_prompt(
    phone: BrowserContext,
    supervised: Supervised,
    model: ModelServerThread,
    sentence: tuple[Path, str, float],
) -> None:
    _, words, seconds = sentence
    model.play({"say": "I heard what you dictated."})
    page = phone.new_page()
    start_agent(page, supervised, "dictate")
    mic = page.locator('.mic[data-box="composer"]')
    mic.get_by_label("dictate").tap()
    expect(mic).to_have_attribute("data-take-state", "live")
    enough_ms = (LEAD_S + seconds + 1.0) * 1000
    poll(page, "(ms) => window.forgeDictation.sentMs >= ms", enough_ms)
    mic.get_by_label("stop and send as the prompt").tap()
    poll(page, "() => window.forgeDictation.state === 'idle'", timeout_ms=DECODE_MS)
    hook: dict[str, Any] = page.evaluate("() => window.forgeDictation")
    assert hook["why"] is None, hook
    assert hook["prompt"], hook
    landed = str(hook["landed"])
    assert score(words, landed).rate <= 0.2, (words, landed)
    expect(page.locator(".msg.user")).to_have_text(landed, timeout=AGENT_MS)
    expect(said(page, "I heard what you dictated.")).to_have_count(1, timeout=AGENT_MS)
    expect(page.get_by_label("prompt", exact=True)).to_have_value("")
    heard = [user_text(request.body) for request in model.server.message_requests()]
    assert any(landed in text for text in heard), (landed, heard)


def test_the_agent_s_voice_say_plays_on_the_page_while_its_voice_is_on(
    desktop: BrowserContext, supervised: Supervised, model: ModelServerThread
) -> None:
    model.play(
        {"when": {"user_text": LISTENING}, "say": "Listening."},
        {
            "when": {"user_text": "Speak up."},
            "tool": {"name": QUALIFIED_NAME, "input": {"text": "Hello from the agent."}},
        },
        {"when": {"tool_result": QUALIFIED_NAME}, "say": "Said it."},
    )
    page = desktop.new_page()
    start_agent(page, supervised, "voice")
    page.locator(".composer").get_by_label("hear this seat").click()
    poll(page, "() => window.forgeVoice.listeners === 1")
    expect(said(page, "Listening.")).to_have_count(1, timeout=AGENT_MS)
    idle(page)
    prompt(page, "Speak up.")
    expect(said(page, "Said it.")).to_have_count(1, timeout=AGENT_MS)
    poll(page, "() => window.forgeVoice.played >= 1", timeout_ms=AGENT_MS)
    page.locator(".composer").get_by_label("stop hearing this seat").click()
    poll(page, "() => window.forgeVoice.listeners === 0")
