"""A seat's files from the page: the work row, the Changes list with statuses, a file's diff lines,
a list that follows `work_changed` while the page stays open, and a document read (issue #16)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from .conftest import Supervised, open_terminal
from .trees import PLAN, seat_repository


@pytest.fixture(scope="module")
def tree(supervised: Supervised) -> Path:
    """The seat's project folder as a repository: one commit, then app.py modified."""
    return seat_repository(supervised.root / "proj")


def open_pane(page: Page, supervised: Supervised, pane: str) -> None:
    open_terminal(page, supervised)  # a seat starts when something is started in it
    page.goto(f"{supervised.url}#/seat/acme/proj/lead/{pane}")
    expect(page.locator(f"[data-view={pane}]")).to_be_visible()


def test_a_modified_file_is_listed_and_its_diff_read(
    desktop: BrowserContext, supervised: Supervised, tree: Path
) -> None:
    page = desktop.new_page()
    open_pane(page, supervised, "changes")
    expect(page.locator(".seatbar .seatwork")).to_contain_text("main")
    expect(page.locator(".seatbar .seatwork")).to_contain_text("1 changed")
    row = page.locator('[data-file="app.py"]')
    expect(row).to_have_attribute("data-status", "modified")
    expect(row).to_contain_text("M")
    expect(row).to_contain_text("+1")
    expect(row).to_contain_text("\N{MINUS SIGN}1")
    row.get_by_role("button").click()
    diff = page.locator('[data-diff-file="app.py"]')
    expect(diff.locator("[data-line=removed]")).to_have_text(["2\N{MINUS SIGN}    return 'old'"])
    expect(diff.locator("[data-line=added]")).to_have_text(["2+    return 'new'"])
    expect(diff.locator("[data-line=context]").first).to_contain_text("def main():")


def test_the_list_follows_the_tree_without_a_reload(
    desktop: BrowserContext, supervised: Supervised, tree: Path
) -> None:
    page = desktop.new_page()
    open_pane(page, supervised, "changes")
    expect(page.locator('[data-file="app.py"]')).to_be_visible()
    page.evaluate("window.__samePage = true")

    (tree / "plan.md").write_text(PLAN + "- and one more step\n", encoding="utf-8")
    (tree / "new.txt").write_text("fresh\n", encoding="utf-8")
    added = page.locator('[data-file="new.txt"]')
    expect(added).to_have_attribute("data-status", "untracked")
    expect(page.locator('[data-file="plan.md"]')).to_have_attribute("data-status", "modified")
    expect(page.locator(".seatbar .seatwork")).to_contain_text("3 changed")
    # The diff is read again after the push: the new lines are there to expand.
    page.locator('[data-file="plan.md"]').get_by_role("button").click()
    expect(page.locator('[data-diff-file="plan.md"] [data-line=added]')).to_have_text(
        ["9+- and one more step"]
    )
    assert page.evaluate("window.__samePage") is True

    (tree / "new.txt").unlink()
    expect(added).to_have_count(0)
    expect(page.locator(".seatbar .seatwork")).to_contain_text("2 changed")


def test_a_document_reads_and_a_bad_path_is_refused_in_words(
    phone: BrowserContext, supervised: Supervised, tree: Path
) -> None:
    page = phone.new_page()
    page.set_viewport_size({"width": 360, "height": 780})
    open_pane(page, supervised, "docs")
    page.get_by_label("Document").fill("plan.md")
    page.get_by_role("button", name="Read").click()
    document = page.locator(f'[data-document="{tree / "plan.md"}"]')
    expect(document).to_contain_text("markdown")
    body = document.locator("[data-markdown]")
    expect(body.locator("h1")).to_have_text("The plan")
    expect(body.locator("li").first).to_have_text("read the tree")
    expect(body.locator("li code")).to_have_text("app.py")
    expect(body.locator("pre code")).to_have_text("make check\n")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360

    page.get_by_label("Document").fill("../forge.toml")
    page.get_by_label("Document").press("Enter")
    expect(page.locator("[data-doc-error]")).to_contain_text("`..` is not allowed")


def test_the_changes_and_a_diff_fit_a_360_px_phone(
    phone: BrowserContext, supervised: Supervised, tree: Path
) -> None:
    page = phone.new_page()
    page.set_viewport_size({"width": 360, "height": 780})
    open_pane(page, supervised, "changes")
    (tree / "wide.txt").write_text("x" * 400 + "\n", encoding="utf-8")
    page.locator('[data-file="wide.txt"]').get_by_role("button").click()
    expect(page.locator('[data-diff-file="wide.txt"] [data-line=added]')).to_be_visible()
    tabs = page.get_by_role("tab", name="docs")
    tabs.scroll_into_view_if_needed()
    expect(tabs).to_be_in_viewport()
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
