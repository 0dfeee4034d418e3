"""Pairing a page (issue #20): a page without the token gets a pairing screen, not a redial
loop; the URL `forge pair` prints pairs it, and so does a pasted token; "forget this device"
unpairs it."""

from __future__ import annotations

from playwright.sync_api import Browser, expect

from .conftest import DESKTOP, Supervised


def test_a_page_without_the_token_asks_to_be_paired_and_a_pasted_token_pairs_it(
    browser: Browser, supervised: Supervised
) -> None:
    context = browser.new_context(**DESKTOP)
    try:
        page = context.new_page()
        page.goto(supervised.url)
        expect(page.locator("[data-link]")).to_have_attribute("data-link", "unpaired")
        expect(page.locator("[data-view=unpaired]")).to_contain_text("forge pair")
        page.get_by_label("token").fill("not-the-token")
        page.get_by_role("button", name="Pair").click()
        expect(page.locator("[data-link]")).to_have_attribute("data-link", "unpaired")
        page.get_by_label("token").fill(supervised.token)
        page.get_by_role("button", name="Pair").click()
        expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")
    finally:
        context.close()


def test_the_printed_url_pairs_a_page_until_it_forgets_this_device(
    browser: Browser, supervised: Supervised
) -> None:
    context = browser.new_context(**DESKTOP)
    try:
        page = context.new_page()
        page.goto(f"{supervised.url}#token={supervised.token}")
        expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")
        assert "token" not in page.url  # taken out of the address bar at once
        page.goto(f"{supervised.url}#/settings")
        expect(page.locator(".paired")).to_contain_text("127.0.0.1")
        page.get_by_role("button", name="Forget this device").click()
        expect(page.locator("[data-link]")).to_have_attribute("data-link", "unpaired")
    finally:
        context.close()
