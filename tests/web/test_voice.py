"""Dictation and voice in a real browser: Chromium's fake microphone plays a corpus sentence, the
page's mic sends it as kind-0 frames, and its words land in the seat's terminal; a second take
and a take while dictation is off are refused in words; the speaker switch plays the seat's clips
in order."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, WebSocketRoute, expect

from forge.workers.dictate.wer import score

from .conftest import DESKTOP, Supervised, chromium, open_terminal, poll, screen_text
from .fakemic import DECODE_MS, DICTATION, LEAD_S, fake_mic_args, padded_sentence


@pytest.fixture(scope="module")
def sentence(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, float]:
    """The corpus clip with silence before and after it: its path, its words, its seconds."""
    return padded_sentence(tmp_path_factory.mktemp("mic"))


@pytest.fixture(scope="module")
def browser(sentence: tuple[Path, str, float]) -> Iterator[Browser]:
    """Chromium whose microphone is the padded sentence, granted without asking."""
    with chromium(fake_mic_args(sentence[0])) as launched:
        yield launched


@pytest.fixture(scope="module")
def supervised(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervised]:
    """`forge supervise` with dictation and speech on."""
    server = Supervised(tmp_path_factory.mktemp("voice"), extra=DICTATION)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def desktop(browser: Browser, supervised: Supervised) -> Iterator[BrowserContext]:
    context = browser.new_context(**DESKTOP)
    context.grant_permissions(["microphone"])
    supervised.pair(context)
    yield context
    context.close()


def dictation(page: Page) -> dict[str, Any]:
    hook: dict[str, Any] = page.evaluate("() => window.forgeDictation")
    return hook


def test_the_fake_microphone_s_words_land_in_the_terminal(
    desktop: BrowserContext, supervised: Supervised, sentence: tuple[Path, str, float]
) -> None:
    _, words, seconds = sentence
    page = desktop.new_page()
    open_terminal(page, supervised)
    page.get_by_label("dictate").click()
    expect(page.locator('.mic[data-box="terminal"]')).to_have_attribute("data-take-state", "live")
    # The take's own clock: stop once it holds the lead, the sentence and a second after it.
    enough_ms = (LEAD_S + seconds + 1.0) * 1000
    poll(page, "(ms) => window.forgeDictation.sentMs >= ms", enough_ms)
    page.get_by_label("stop dictating").click()
    poll(page, "() => window.forgeDictation.state === 'idle'", timeout_ms=DECODE_MS)
    hook = dictation(page)
    assert hook["why"] is None, hook
    landed = str(hook["landed"])
    assert score(words, landed).rate <= 0.2, (words, landed)
    assert "speech" in hook["phases"], hook
    assert hook["maxLevel"] > 0.01, hook
    poll(
        page,
        """(landed) => {
            const term = window.forgeTerminal.term, buffer = term.buffer.active;
            for (let i = 0; i < buffer.length; i++)
                if (buffer.getLine(i).translateToString(true).includes(landed)) return true;
            return false;
        }""",
        landed,
    )
    assert landed in screen_text(page)


def test_a_second_take_on_the_seat_is_refused_in_words(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    first, second = desktop.new_page(), desktop.new_page()
    open_terminal(first, supervised)
    first.get_by_label("dictate").click()
    poll(first, "() => window.forgeDictation.phases.length > 0")  # the take is the server's
    second.goto(f"{supervised.url}#/seat/acme/proj/lead/terminal")
    expect(second.locator("[data-link]")).to_have_attribute("data-link", "open")
    second.get_by_label("dictate").click()
    expect(second.locator("[data-dictation-why]")).to_contain_text("already has a live take")
    first.get_by_label("cancel dictation").click()
    expect(first.locator('.mic[data-box="terminal"]')).to_have_attribute("data-take-state", "idle")
    assert dictation(first)["landed"] is None


def test_a_take_pressed_while_a_new_link_replays_stays_live(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    """After a reconnect the page replays its surfaces once home's snapshot comes. A take the
    person pressed before that was sent on the new link and is alive; the replay used to end it
    as "dropped mid-take" (the second-take test saw it on a first link, now and then)."""
    links: list[WebSocketRoute] = []
    held: list[str | bytes] = []
    holding = threading.Event()

    def route(page_side: WebSocketRoute) -> None:
        links.append(page_side)
        server = page_side.connect_to_server()
        page_side.on_message(lambda message: to_server(server, message))
        server.on_message(lambda message: to_page(page_side, message))

    def to_server(server: WebSocketRoute, message: str | bytes) -> None:
        server.send(message)
        if isinstance(message, str) and '"dictate_stream"' in message:
            holding.clear()
            for late in held:
                links[-1].send(late)
            held.clear()

    def to_page(page_side: WebSocketRoute, message: str | bytes) -> None:
        if holding.is_set() and not (isinstance(message, str) and '"greeting"' in message):
            held.append(message)  # home's snapshot and the rest wait for the take
        else:
            page_side.send(message)

    page = desktop.new_page()
    page.route_web_socket("**/socket**", route)
    open_terminal(page, supervised)
    holding.set()
    links[0].close()  # the link drops; the page dials again and is greeted, nothing more
    expect(page.locator("[data-link]")).to_have_attribute("data-link", "reconnecting")
    expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")
    page.get_by_label("dictate").click()
    poll(page, "() => window.forgeDictation.phases.length > 0")  # the take is the server's
    hook = dictation(page)
    assert (hook["state"], hook["why"], len(links)) == ("live", None, 2), hook
    page.get_by_label("cancel dictation").click()
    expect(page.locator('.mic[data-box="terminal"]')).to_have_attribute("data-take-state", "idle")


def say(supervised: Supervised, text: str) -> None:
    said = subprocess.run(
        [sys.executable, "-m", "forge.cli", "say", "--url", f"ws://127.0.0.1:{supervised.port}/socket",
         "acme/proj/lead", text],
        env=supervised.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert said.returncode == 0, said.stdout + said.stderr


def test_the_speaker_switch_plays_the_seat_s_clips_in_order(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    page = desktop.new_page()
    open_terminal(page, supervised)  # the seat is started: voice_mode answers for it
    page.get_by_label("hear this seat").click()
    poll(page, "() => window.forgeVoice.listeners === 1")
    say(supervised, "one")
    say(supervised, "two")
    poll(page, "() => window.forgeVoice.played === 2")
    voice = page.evaluate("() => window.forgeVoice")
    assert (voice["clips"], voice["lastSeq"] > 1) == (2, True), voice
    page.get_by_label("stop hearing this seat").click()
    poll(page, "() => window.forgeVoice.listeners === 0")


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervised]:
    """`forge supervise` as configured by default: dictation off."""
    server = Supervised(tmp_path_factory.mktemp("plain"))
    server.start()
    yield server
    server.stop()


def test_dictation_off_is_said_in_words(browser: Browser, plain: Supervised) -> None:
    context = browser.new_context(**DESKTOP)
    plain.pair(context)
    page = context.new_page()
    open_terminal(page, plain)
    page.get_by_label("dictate").click()
    expect(page.locator("[data-dictation-why]")).to_contain_text("dictation is off on this server")
    expect(page.locator('.mic[data-box="terminal"]')).to_have_attribute("data-take-state", "idle")
    context.close()
