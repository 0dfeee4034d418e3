"""The settings page edits forge.toml: a control per key, a draft, a save that writes the file;
a second page's save against the old file is refused `stale` and says so; an invalid value shows
the loader's message beside its key (issue #16)."""

from __future__ import annotations

import json
import re
import tomllib

from playwright.sync_api import BrowserContext, Locator, Page, WebSocketRoute, expect

from .conftest import Supervised


def open_settings(page: Page, supervised: Supervised) -> None:
    page.goto(f"{supervised.url}#/settings")
    expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")
    expect(page.locator("[data-view=settings] fieldset").first).to_be_visible()


def setting(page: Page, path: str) -> Locator:
    """The row of one key: its label, control and messages."""
    return page.locator(f'[data-key="{path}"]')


def on_disk(supervised: Supervised) -> dict[str, object]:
    return tomllib.loads(supervised.config.read_text(encoding="utf-8"))


def test_a_saved_key_is_in_the_file_and_a_restart_key_says_when(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    page = desktop.new_page()
    open_settings(page, supervised)
    size = setting(page, "documents.max_size_mib").locator("input")
    size.fill("20")
    audio = setting(page, "browser.audio").get_by_role("switch")
    expect(audio).to_be_checked()
    audio.focus()
    page.keyboard.press("Space")  # a switch is reachable and toggled from the keyboard
    expect(audio).not_to_be_checked()
    expect(page.locator("[data-draft-size]")).to_have_text("2 changes")
    page.get_by_role("button", name="Save", exact=True).click()

    saved = page.locator("[data-saved]")
    expect(saved).to_contain_text("Saved to forge.toml")
    expect(saved).to_contain_text("browser.audio: applies at the next start")
    expect(page.locator("[data-draft-size]")).to_have_text("no changes")
    config = on_disk(supervised)
    assert config["documents"] == {"max_size_mib": 20}
    assert config["browser"] == {"audio": False}
    # The reload's push carries the file's new fingerprint, and the page draws its values.
    expect(size).to_have_value("20")
    expect(audio).not_to_be_checked()


def test_a_second_page_saving_over_the_first_is_told_stale(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    first, second = desktop.new_page(), desktop.new_page()
    open_settings(first, supervised)
    open_settings(second, supervised)
    waited = setting(second, "lab.dask_no_worker_s").locator("input")
    waited.fill("90")  # the second page's draft begins against the file as it is now
    before = second.locator("[data-fingerprint]").inner_text()

    setting(first, "documents.max_size_mib").locator("input").fill("30")
    first.get_by_role("button", name="Save", exact=True).click()
    expect(first.locator("[data-saved]")).to_be_visible()

    # The first save's push reaches the second page, and leaves its draft alone.
    expect(second.locator("[data-fingerprint]")).not_to_have_text(before)
    expect(waited).to_have_value("90")
    expect(setting(second, "documents.max_size_mib").locator("input")).to_have_value("30")
    second.get_by_role("button", name="Save", exact=True).click()
    stale = second.locator("[data-stale]")
    expect(stale).to_contain_text("Someone else saved forge.toml")
    assert "dask_no_worker_s" not in str(on_disk(supervised).get("lab", {}))
    expect(waited).to_have_value("90")

    stale.get_by_role("button", name=re.compile("Reload the settings")).click()
    second.get_by_role("button", name="Save", exact=True).click()
    expect(second.locator("[data-saved]")).to_be_visible()
    config = on_disk(supervised)
    assert config["lab"] == {"dask_no_worker_s": 90}
    assert config["documents"] == {"max_size_mib": 30}


def test_an_invalid_value_shows_the_loaders_message_beside_its_key(
    phone: BrowserContext, supervised: Supervised
) -> None:
    page = phone.new_page()
    page.set_viewport_size({"width": 360, "height": 780})
    open_settings(page, supervised)
    before = supervised.config.read_bytes()
    row = setting(page, "projects.acme.proj.browser_profile")
    row.locator("input").fill("not a profile!")
    page.get_by_role("button", name="Save", exact=True).click()

    refusal = row.locator("[data-refusal]")
    expect(refusal).to_contain_text("browser_profile: expected a profile name")
    expect(refusal).not_to_contain_text("line ")  # the edited text's line is in no file
    expect(page.locator(".savebar [role=alert]")).to_contain_text("see the message beside")
    assert supervised.config.read_bytes() == before
    # Usable at 360 px: the row's control and its message fit the width.
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 360
    row.locator("input").fill("work")
    expect(refusal).to_have_count(0)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("[data-saved]")).to_be_visible()
    assert 'browser_profile = "work"' in supervised.config.read_text(encoding="utf-8")


def test_a_save_sent_before_home_arrives_is_answered_not_called_lost(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    """The page is open at the greeting and draws the settings that follow it, but it replays its
    surfaces onto the new link only when home's snapshot comes. A save sent in between went on
    this very link: the replay must not call it lost. Home's snapshot (and all after it) is held
    here until the page's save has gone to the server, the order a loaded machine can give."""
    page = desktop.new_page()
    held: list[str | bytes] = []
    state = {"holding": True}

    def link(route: WebSocketRoute) -> None:
        server = route.connect_to_server()

        def to_server(message: str | bytes) -> None:
            server.send(message)
            if isinstance(message, str) and json.loads(message)["kind"] == "settings_edit":
                state["holding"] = False
                for waiting in held:
                    route.send(waiting)

        def to_page(message: str | bytes) -> None:
            if state["holding"] and (held or _is_home_snapshot(message)):
                held.append(message)
            else:
                route.send(message)

        route.on_message(to_server)
        server.on_message(to_page)

    page.route_web_socket(re.compile(r"/socket"), link)
    open_settings(page, supervised)
    setting(page, "lab.dask_no_worker_s").locator("input").fill("75")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("[data-saved]")).to_contain_text("Saved to forge.toml")
    assert held, "home's snapshot was never held: the page saved after its replay"
    assert on_disk(supervised)["lab"] == {"dask_no_worker_s": 75}


def _is_home_snapshot(message: str | bytes) -> bool:
    if not isinstance(message, str):
        return False
    decoded = json.loads(message)
    return bool(decoded["kind"] == "snapshot" and decoded.get("subject") == "home")


def test_a_project_is_added_renamed_and_removed_and_a_live_ones_removal_refused(
    desktop: BrowserContext, supervised: Supervised
) -> None:
    page = desktop.new_page()
    open_settings(page, supervised)
    projects = page.locator("[data-area=projects]")
    projects.get_by_text("Add a project").click()
    form = projects.locator(".addform")
    form.get_by_label("org").fill("acme")
    form.get_by_label("name").fill("extra")
    form.get_by_label("path").fill(str(supervised.root))
    form.get_by_role("button", name="Add", exact=True).click()
    expect(page.locator('[data-entry="projects.acme.extra"]')).to_contain_text("(new)")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("[data-saved]")).to_be_visible()
    assert {"org": "acme", "name": "extra", "path": str(supervised.root)} in on_disk(supervised)[
        "projects"
    ]

    # Its name key renames it; its Remove takes it out of the file.
    setting(page, "projects.acme.extra.name").locator("input").fill("renamed")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("[data-saved]")).to_be_visible()
    names = [entry["name"] for entry in on_disk(supervised)["projects"]]  # type: ignore[index]
    assert names == ["proj", "typed", "renamed"]
    renamed = page.locator('[data-entry="projects.acme.renamed"]')
    renamed.get_by_role("button", name="Remove").click()
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("[data-saved]")).to_be_visible()
    names = [entry["name"] for entry in on_disk(supervised)["projects"]]  # type: ignore[index]
    assert names == ["proj", "typed"]

    # A project with a started seat: the server's guard refuses, beside the entry.
    page.goto(f"{supervised.url}#/seat/acme/proj/lead/terminal")
    expect(page.locator("[data-role]")).to_have_attribute("data-role", "controller")
    page.goto(f"{supervised.url}#/settings")
    live = page.locator('[data-entry="projects.acme.proj"]')
    live.get_by_role("button", name="Remove").click()
    page.get_by_role("button", name="Save", exact=True).click()
    expect(live.locator(".refusal")).to_contain_text("has a live seat (acme/proj/lead)")
    names = [entry["name"] for entry in on_disk(supervised)["projects"]]  # type: ignore[index]
    assert names == ["proj", "typed"]
