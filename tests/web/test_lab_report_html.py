"""report.html in Chromium: it opens from disk with every network request refused, asks for
nothing but itself, logs no console error, and the recipe's hostile output stays text."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Request, Route, expect

from tests.lab.kit import Kit
from tests.lab.reportrun import HOSTILE, finished_run

from .conftest import DESKTOP


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Kit:
    return finished_run(tmp_path_factory.mktemp("report-html"))


def test_report_html_opens_offline_without_console_errors(browser: Browser, finished: Kit) -> None:
    report = finished.out / "report.html"
    context = browser.new_context(**DESKTOP, offline=True)
    asked: list[str] = []
    errors: list[str] = []

    def refuse(route: Route, request: Request) -> None:
        asked.append(request.url)
        if request.url == report.as_uri():
            route.continue_()
        else:
            route.abort()

    context.route("**/*", refuse)
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report.as_uri())
    expect(page.locator("h1")).to_have_text("Cohort evaluation")
    expect(page.locator("svg")).to_be_visible()
    attempt = page.locator("details.attempt#t1-a-rep-1")
    attempt.locator("summary").click()
    transcript = attempt.locator("pre.transcript").nth(1)
    expect(transcript).to_contain_text(HOSTILE)
    expect(attempt.locator("pre.diff .add").first).to_be_visible()
    assert page.title().startswith("Cohort evaluation")
    assert page.locator("img").count() == 0
    assert page.evaluate("document.scripts.length") == 0
    assert asked == [report.as_uri()]
    assert errors == []
    context.close()


def test_report_html_links_stay_inside_the_out_folder(browser: Browser, finished: Kit) -> None:
    context = browser.new_context(**DESKTOP, offline=True)
    page = context.new_page()
    page.goto((finished.out / "report.html").as_uri())
    hrefs = page.locator("a[href]").evaluate_all("(links) => links.map((a) => a.href)")
    out = finished.out.resolve().as_uri() + "/"
    assert hrefs
    assert all(href.startswith(out) for href in hrefs)
    assert all(Path(href.removeprefix("file://")).is_file() for href in hrefs)
    context.close()
