"""A seat's tab playing a WebAudio tone, heard on the page: kind-2 frames through the page's
AudioWorklet player (samples played, a level above silence), and the tab's speaker toggle: off,
no frame arrives while another viewer of the tab keeps hearing it; on again, they flow."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from forge.testing.pages import OnePage, served
from forge.workers.audio.protocol import SoundMissing, find_binaries

from .conftest import DESKTOP, Supervised, chromium, poll

try:
    find_binaries()
except SoundMissing as missing:
    pytest.skip(str(missing), allow_module_level=True)

FRAMES_A_SECOND = 50
BUFFER_LIMIT = 48000 * 200 // 1000
"""The player's jitter buffer holds at most 200 ms."""


class TonePage(OnePage):
    """A page that plays a 440 Hz sine from the first press anywhere on it (a user gesture)."""

    BODY = b"""<!doctype html><html><head><title>quiet</title>
<style>html,body{margin:0;height:100%;background:#0000ff}</style></head><body><script>
document.addEventListener('pointerdown', () => {
  if (window.ctx) return;
  window.ctx = new AudioContext({sampleRate: 48000});
  const tone = ctx.createOscillator(), level = ctx.createGain();
  tone.frequency.value = 440;
  level.gain.value = 0.3;
  tone.connect(level).connect(ctx.destination);
  tone.start();
  document.body.style.background = '#ff0000';
  document.title = 'playing';
});
</script></body></html>"""


@pytest.fixture(scope="module")
def tone_page() -> Iterator[str]:
    with served(TonePage, "/tone") as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """The viewer's Chromium may start sound without a gesture (the player's context)."""
    with chromium(["--autoplay-policy=no-user-gesture-required"]) as launched:
        yield launched


@pytest.fixture
def desktop(browser: Browser, supervised: Supervised) -> Iterator[BrowserContext]:
    context = browser.new_context(**DESKTOP)
    supervised.pair(context)
    yield context
    context.close()


def sound(page: Page) -> dict[str, Any]:
    hook: dict[str, Any] = page.evaluate("() => window.forgeSound")
    return hook


def view(page: Page, supervised: Supervised) -> None:
    page.goto(f"{supervised.url}#/seat/acme/proj/lead/browser")
    expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")


def test_a_tab_s_tone_plays_on_the_page_and_its_toggle_stops_the_frames(
    desktop: BrowserContext, supervised: Supervised, tone_page: str
) -> None:
    page = desktop.new_page()
    view(page, supervised)
    address = page.get_by_label("address")
    address.fill(tone_page)
    address.press("Enter")
    expect(page.locator(".browserpane [data-role]")).to_have_attribute("data-role", "controller")
    poll(page, "() => window.forgeBrowser.drawn > 0")
    page.locator("canvas.page").click()  # the press is the tab's gesture: the tone starts
    poll(
        page,
        "(rate) => { const s = window.forgeSound;"
        " return s.framesIn >= 25 && s.samplesPlayed >= rate / 2 && s.maxLevel > 0.01; }",
        48000,
    )
    heard = sound(page)
    assert (heard["on"], heard["framesAfterOff"], heard["state"]) == (True, 0, "running"), heard
    assert heard["buffered"] <= BUFFER_LIMIT, heard  # bounded: behind, the newest sound wins

    other = desktop.new_page()  # a second viewer of the same tab keeps its sound on
    view(other, supervised)
    poll(other, "() => window.forgeSound && window.forgeSound.framesIn > 0")

    page.get_by_label("mute this tab").click()
    poll(page, "() => window.forgeSound.offAnswered")
    before = sound(other)["framesIn"]
    poll(other, "(n) => window.forgeSound.framesIn >= n", before + FRAMES_A_SECOND)
    muted = sound(page)
    assert (muted["on"], muted["framesAfterOff"]) == (False, 0), muted
    expect(page.get_by_label("hear this tab")).to_have_attribute("data-sound", "off")

    page.get_by_label("hear this tab").click()
    poll(page, "(n) => window.forgeSound.framesIn >= n", muted["framesIn"] + FRAMES_A_SECOND)
    other.close()
