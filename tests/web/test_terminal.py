"""The terminal in a real browser: typing, a phone's keys, IME, a watcher, a supervisor restart."""

from __future__ import annotations

import time

from playwright.sync_api import BrowserContext, expect

from .conftest import TIMEOUT_MS, Supervised, open_terminal, screen_text, wait_for_screen


def test_typed_echo_is_drawn(desktop: BrowserContext, supervised: Supervised) -> None:
    page = desktop.new_page()
    open_terminal(page, supervised)
    page.locator(".term").click()
    page.keyboard.type("echo hi\n")
    wait_for_screen(page, r"^hi$")
    assert "echo hi" in screen_text(page)


def test_a_phone_interrupts_with_sticky_ctrl(phone: BrowserContext, supervised: Supervised) -> None:
    page = phone.new_page()
    open_terminal(page, supervised)
    page.locator(".ime").tap()
    page.keyboard.type("sleep 100\n")
    expect(page.locator("[data-terminal-state]")).to_have_attribute(
        "data-terminal-state", "running"
    )
    page.locator('[data-key="ctrl"]').tap()
    expect(page.locator('[data-key="ctrl"]')).to_have_attribute("aria-pressed", "true")
    page.keyboard.type("c")
    expect(page.locator('[data-key="ctrl"]')).to_have_attribute("aria-pressed", "false")
    expect(page.locator("[data-terminal-state]")).to_have_attribute("data-terminal-state", "idle")
    page.keyboard.type("echo back\n")
    wait_for_screen(page, r"^back$")


def test_ime_composition_lands_once(desktop: BrowserContext, supervised: Supervised) -> None:
    page = desktop.new_page()
    open_terminal(page, supervised)
    page.locator(".term").click()
    page.keyboard.type("echo ")
    cdp = desktop.new_cdp_session(page)
    cdp.send("Input.imeSetComposition", {"text": "にほ", "selectionStart": 2, "selectionEnd": 2})
    cdp.send("Input.imeSetComposition", {"text": "日本", "selectionStart": 2, "selectionEnd": 2})
    cdp.send("Input.insertText", {"text": "日本"})
    page.keyboard.type(" done\n")
    wait_for_screen(page, r"^日本 done$")
    assert "日本日本" not in screen_text(page)
    assert "にほ" not in screen_text(page)


def test_phone_ime_composition_lands_once(phone: BrowserContext, supervised: Supervised) -> None:
    page = phone.new_page()
    open_terminal(page, supervised)
    page.locator(".ime").tap()
    page.keyboard.type("echo ")
    cdp = phone.new_cdp_session(page)
    for partial in ("h", "he", "hel", "hello"):  # how an Android keyboard grows a word
        cdp.send(
            "Input.imeSetComposition",
            {"text": partial, "selectionStart": len(partial), "selectionEnd": len(partial)},
        )
    cdp.send("Input.insertText", {"text": "hello"})
    page.keyboard.type("\n")
    wait_for_screen(page, r"^hello$")
    assert "hhe" not in screen_text(page)


def test_a_second_page_watches_the_same_screen_and_cannot_type(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    driver = desktop.new_page()
    open_terminal(driver, supervised)
    driver.locator(".term").click()
    driver.keyboard.type("echo shared\n")
    wait_for_screen(driver, r"^shared$")
    watcher = desktop.new_page()
    watcher.goto(f"{supervised.url}#/seat/acme/proj/lead/terminal")
    expect(watcher.locator("[data-role]")).to_have_attribute("data-role", "watcher")
    wait_for_screen(watcher, r"^shared$")
    watcher.locator(".term").click()
    watcher.keyboard.type("echo nope\n")
    expect(watcher.get_by_text("watching: take control to type").first).to_be_visible()
    driver.keyboard.type("echo fence\n")
    wait_for_screen(watcher, r"^fence$")
    assert "nope" not in screen_text(driver)
    assert "nope" not in screen_text(watcher)
    watcher.get_by_role("button", name="Take control").click()
    expect(watcher.locator("[data-role]")).to_have_attribute("data-role", "controller")
    expect(driver.locator("[data-role]")).to_have_attribute("data-role", "watcher")


def test_the_page_reconnects_and_redraws_after_a_restart(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    page = desktop.new_page()
    open_terminal(page, supervised)
    page.locator(".term").click()
    page.keyboard.type("echo before\n")
    wait_for_screen(page, r"^before$")
    supervised.stop()
    expect(page.locator("[data-link]")).to_have_attribute("data-link", "reconnecting")
    supervised.start()
    expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")
    # The old shell went with the old supervisor: the seat's terminal is opened afresh and drawn.
    expect(page.locator("[data-role]")).to_have_attribute("data-role", "controller")
    wait_for_screen(page, r"[$#] *$", without="before")
    page.locator(".term").click()
    page.keyboard.type("echo after\n")
    wait_for_screen(page, r"^after$")


def poll_bytes(supervised: Supervised, expected: bytes) -> None:
    """Wait until the recorder holds as many bytes as `expected`, then they must be those."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    got = b""
    while time.monotonic() < deadline:
        got = supervised.typed.read_bytes() if supervised.typed.exists() else b""
        if len(got) >= len(expected):
            break
        time.sleep(0.05)
    assert got == expected


def test_a_phone_sends_exactly_what_was_typed(
    desktop: BrowserContext, phone: BrowserContext, supervised: Supervised
) -> None:
    """The bytes the shell gets, exactly, from a desktop and then a phone on the same seat: typed
    letters, a composed word (once), an extra key, sticky Ctrl. (A phone screenshot showed a
    stray `n` before a typed command; no key was sent: see the next test.)"""
    url = f"{supervised.url}#/seat/acme/typed/lead/terminal"
    driver = desktop.new_page()
    driver.goto(url)
    expect(driver.locator("[data-role]")).to_have_attribute("data-role", "controller")
    driver.locator(".term").click()
    driver.keyboard.type("ls -la\n")
    expected = b"ls -la\r"
    poll_bytes(supervised, expected)
    driver.close()

    page = phone.new_page()
    page.goto(url)
    expect(page.locator("[data-role]")).to_have_attribute("data-role", "controller")
    page.locator(".ime").tap()
    page.keyboard.type("ls -la /usr/lib | head -20\n")
    expected += b"ls -la /usr/lib | head -20\r"
    poll_bytes(supervised, expected)
    cdp = phone.new_cdp_session(page)
    for partial in ("w", "wo", "wor", "word"):
        cdp.send(
            "Input.imeSetComposition",
            {"text": partial, "selectionStart": len(partial), "selectionEnd": len(partial)},
        )
    cdp.send("Input.insertText", {"text": "word"})
    page.locator('[data-key="Escape"]').tap()
    page.locator('[data-key="ctrl"]').tap()
    page.keyboard.type("c")
    expected += b"word\x1b\x03"
    poll_bytes(supervised, expected)


def test_a_phone_attaching_after_a_wide_desktop_draws_a_clean_prompt(
    desktop: BrowserContext, phone: BrowserContext, supervised: Supervised
) -> None:
    """The view is drawn at the grid it was painted at, then fitted: parsed after the phone's
    narrower fit, a long last row wrapped and its tail stayed beside the prompt (`#nupg`)."""
    url = f"{supervised.url}#/seat/acme/proj/wide/terminal"
    driver = desktop.new_page()
    driver.goto(url)
    expect(driver.locator("[data-role]")).to_have_attribute("data-role", "controller")
    driver.locator(".term").click()
    driver.keyboard.type("printf '%0100d\\n' 7\n")
    wait_for_screen(driver, r"^0{99}7$")
    driver.close()

    page = phone.new_page()
    page.goto(url)
    expect(page.locator("[data-role]")).to_have_attribute("data-role", "controller")
    page.locator(".ime").tap()
    page.keyboard.type("echo phone\n")
    wait_for_screen(page, r"^phone")
    rows = screen_text(page).splitlines()
    assert "# echo phone" in rows, rows
    assert "phone" in rows, rows
