"""The Docs pane as a person uses it (issue 36 item 6), at 360x740, 390x844 and 1280x800: every
document of the seat's tree and of a document root is listed and opens with a tap, markdown is
rendered (headings, lists, code; not `# title` source), and a document that carries a script,
an event handler or a `javascript:` link shows its words with none of them left in the page."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import DESKTOP, PHONE, Supervised, open_terminal

SIZES: dict[str, dict[str, Any]] = {
    "360x740": {**PHONE, "viewport": {"width": 360, "height": 740}},
    "390x844": PHONE,
    "1280x800": DESKTOP,
}
PLAN = (
    "# The plan\n\nWe **ship** it.\n\n- read the tree\n- change `app.py`\n\n```\nmake check\n```\n"
)
EVIL = """# Harmless title

<script>window.forgeXss = "script"</script>

<img src="x" onerror="window.forgeXss = 'onerror'">

<a href="javascript:window.forgeXss='href'">a link</a>
and [another](javascript:window.forgeXss='md')

<svg><animate onbegin="window.forgeXss='svg'" attributeName="x" dur="1s"/></svg>

<iframe src="javascript:parent.forgeXss='iframe'"></iframe>
"""


@pytest.fixture(scope="module")
def supervised(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervised]:
    """`proj` with documents in its tree and a document root beside it."""
    root = tmp_path_factory.mktemp("docs")
    server = Supervised(root)
    tree, notes = root / "proj", root / "notes"
    (tree / "docs").mkdir(parents=True)
    notes.mkdir()
    (tree / "plan.md").write_text(PLAN, encoding="utf-8")
    (tree / "docs" / "guide.md").write_text("# Guide\n\nRead me.\n", encoding="utf-8")
    (tree / "app.py").write_text("print('not a document')\n", encoding="utf-8")
    (notes / "evil.md").write_text(EVIL, encoding="utf-8")
    (notes / "todo.txt").write_text("buy milk\n", encoding="utf-8")
    config = server.config.read_text(encoding="utf-8")
    shell = 'shell = "/bin/sh"\n'
    server.config.write_text(
        config.replace(shell, f'{shell}document_roots = ["{notes}"]\n', 1), encoding="utf-8"
    )
    server.notes = notes  # type: ignore[attr-defined]
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=SIZES)
def page(
    request: pytest.FixtureRequest, browser: Browser, supervised: Supervised
) -> Iterator[Page]:
    context = browser.new_context(**SIZES[request.param])
    supervised.pair(context)
    page = context.new_page()
    open_terminal(page, supervised)  # a seat starts when something is started in it
    page.goto(f"{supervised.url}#/seat/acme/proj/lead/docs")
    expect(page.locator("[data-view=docs]")).to_be_visible()
    yield page
    context.close()


def no_sideways_scroll(page: Page) -> None:
    width = page.viewport_size["width"] if page.viewport_size else 0
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_the_tree_is_listed_and_a_document_opens_rendered(
    page: Page, supervised: Supervised
) -> None:
    listed = page.locator(".doclist [data-doc]")
    expect(listed).to_have_text(
        [re.compile(r"docs/guide\.md\s*markdown"), re.compile(r"plan\.md\s*markdown")]
    )
    page.locator('[data-doc="plan.md"]').click()
    document = page.locator(f'[data-document="{supervised.root / "proj" / "plan.md"}"]')
    body = document.locator("[data-markdown]")
    expect(body.locator("h1")).to_have_text("The plan")
    expect(body.locator("strong")).to_have_text("ship")
    expect(body.locator("li")).to_have_text(["read the tree", "change app.py"])
    expect(body.locator("pre code")).to_have_text("make check\n")
    expect(body).not_to_contain_text("# The plan")
    expect(body).not_to_contain_text("**")
    no_sideways_scroll(page)


def test_a_document_root_is_browsed_and_a_script_in_it_never_runs(
    page: Page, supervised: Supervised
) -> None:
    notes: Path = supervised.notes  # type: ignore[attr-defined]
    page.get_by_role("button", name=str(notes)).click()
    expect(page.locator(".doclist [data-doc]")).to_have_text(
        [re.compile(r"evil\.md\s*markdown"), re.compile(r"todo\.txt\s*text")]
    )
    page.locator('[data-doc="evil.md"]').click()
    body = page.locator(f'[data-document="{notes / "evil.md"}"] [data-markdown]')
    expect(body.locator("h1")).to_have_text("Harmless title")
    expect(body.get_by_text("a link")).to_be_visible()
    assert body.locator("script, iframe, animate").count() == 0
    assert (
        body.evaluate(
            """(root) => [...root.querySelectorAll("*")].flatMap((element) =>
            [...element.attributes].filter((attribute) =>
                attribute.name.startsWith("on") || /^\\s*javascript:/i.test(attribute.value)
            ).map((attribute) => element.tagName + " " + attribute.name))"""
        )
        == []
    )
    for link in body.locator("a").all():
        link.click()  # a sanitized link goes nowhere this page would run
    assert page.evaluate("window.forgeXss") is None
    no_sideways_scroll(page)
