"""The page's look (`[client]` theme, font, mark): from the greeting, and again from the
settings push a reload of forge.toml sends, with no reconnect."""

from __future__ import annotations

from playwright.sync_api import BrowserContext, expect

from .conftest import Supervised, open_terminal, poll

LOOK_JS = """() => {
    const term = window.forgeTerminal && window.forgeTerminal.term;
    return term ? [term.options.theme.background, term.options.fontFamily] : null;
}"""


def test_a_reload_restyles_the_open_page(desktop: BrowserContext, supervised: Supervised) -> None:
    page = desktop.new_page()
    open_terminal(page, supervised)
    html = page.locator("html")
    expect(html).to_have_attribute("data-theme", "dark")
    expect(page.locator(".brand .mark")).to_have_count(0)
    dark = page.evaluate(LOOK_JS)

    config = supervised.config.read_text(encoding="utf-8")
    client = '[client]\ntheme = "light"\nmark = "◆"\nfont = "monospace"\n\n'
    supervised.config.write_text(client + config, encoding="utf-8")
    try:
        expect(html).to_have_attribute("data-theme", "light")
        expect(page.locator(".brand .mark")).to_have_text("◆")
        poll(page, f"(dark) => JSON.stringify(({LOOK_JS})()) !== JSON.stringify(dark)", dark)
        background, font = page.evaluate(LOOK_JS)
        assert (background, font) == ("#fbfbf8", "monospace")
        expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")
    finally:
        supervised.config.write_text(config, encoding="utf-8")
    expect(html).to_have_attribute("data-theme", "dark")
    expect(page.locator(".brand .mark")).to_have_count(0)
