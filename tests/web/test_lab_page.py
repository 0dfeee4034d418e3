"""The Lab page against a real `forge supervise`: a run `forge evaluate --approve` handed to it
shows with its attempts running and each one's live process tree (the harness in it); Stop,
confirmed from a 360 px phone, ends the run as Ctrl-C in the CLI would, both pages show it
ended, and the CLI exits 130."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Dialog, Locator, Page, expect

from tests.lab.kit import Kit, kill_all, marker_processes

from .conftest import PHONE, Supervised
from .labrun import held_cohort, start_run

NARROW = {**PHONE, "viewport": {"width": 360, "height": 740}}


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    kit = Kit(tmp_path)
    yield kit
    leftovers = marker_processes(str(kit.ctl))
    kill_all(leftovers)
    assert leftovers == [], "a test left processes of its attempts running"


@pytest.fixture
def narrow(browser: Browser, supervised: Supervised) -> Iterator[BrowserContext]:
    context = browser.new_context(**NARROW)
    supervised.pair(context)
    yield context
    context.close()


def attempt(page: Page, label: str) -> Locator:
    """The attempt table's row of `label` (task/variant/rep-n)."""
    return page.locator(f'table.attempts tr[data-attempt="{label}"]')


def test_a_held_run_shows_its_attempts_and_trees_and_stops_from_a_phone(
    kit: Kit, supervised: Supervised, desktop: BrowserContext, narrow: BrowserContext
) -> None:
    page = desktop.new_page()
    page.goto(f"{supervised.url}#/lab")
    expect(page.get_by_role("link", name="Lab")).to_have_attribute("aria-current", "page")
    held_cohort(kit)
    process = start_run(kit, supervised, parallel=2, held=2)
    try:
        listed = page.locator(".labruns li").first
        expect(listed).to_have_attribute("data-status", "running")
        expect(listed.locator("[data-progress]")).to_have_text("0/4")
        expect(listed).to_contain_text("cohort/cohort.json")
        run = listed.get_attribute("data-run")
        listed.get_by_role("link").click()
        expect(page).to_have_url(f"{supervised.url}#/lab/{run}")

        view = page.locator('[data-view="lab-run"]')
        expect(view).to_contain_text("b fixes more than a")
        runners = []
        for label in ("t1/a/rep-1", "t1/b/rep-1"):
            expect(attempt(page, label)).to_have_attribute("data-state", "running")
            runners.append(attempt(page, label).locator(".runner").inner_text())
        assert sorted(runners) == [f"lab-{run}-1", f"lab-{run}-2"]
        for label in ("t1/a/rep-2", "t1/b/rep-2"):
            expect(attempt(page, label)).to_have_attribute("data-state", "pending")
            expect(attempt(page, label).locator(".runner")).to_have_text("—")
        harnesses = kit.harnesses()
        assert len(harnesses) == 2
        for harness in harnesses:  # each harness is a row of one running attempt's live tree
            tree_row = page.locator(f'section.attemptprocs tr[data-pid="{harness.pid}"]')
            expect(tree_row).to_be_visible()
            expect(tree_row).to_contain_text("fake_harness.py")
        for label in ("t1/a/rep-1", "t1/b/rep-1"):
            expect(page.locator(f'section.attemptprocs[data-attempt="{label}"]')).to_be_visible()

        phone = narrow.new_page()
        phone.goto(f"{supervised.url}#/lab/{run}")
        stop = phone.get_by_role("button", name="Stop")
        expect(stop).to_be_in_viewport()
        assert phone.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth"), (
            "the Lab page is wider than a 360 px phone"
        )
        asked: list[str] = []

        def confirm(dialog: Dialog) -> None:
            asked.append(dialog.message)
            dialog.accept()

        phone.once("dialog", confirm)
        stop.tap()
        for shown in (phone, page):
            ended = shown.locator('[data-view="lab-run"]')
            expect(ended).to_have_attribute("data-status", "aborted")
            expect(ended.locator(".facts .ending")).to_contain_text(
                "exit 130 (stopped) · interrupted by SIGINT"
            )
            expect(shown.get_by_role("button", name="Stop")).to_have_count(0)
            expect(shown.locator("section.attemptprocs")).to_have_count(0)
            expect(shown.locator('table.attempts tr[data-state="pending"]')).to_have_count(4)
        assert len(asked) == 1
        assert asked[0].startswith("Stop the run of cohort/cohort.json?")
        _, stderr = process.communicate(timeout=90)
        assert process.returncode == 130, stderr
        assert "forge: run aborted: interrupted by SIGINT" in stderr
        page.goto(f"{supervised.url}#/lab")
        expect(page.locator(f'.labruns li[data-run="{run}"]')).to_contain_text(
            "exit 130 (stopped) · interrupted by SIGINT"
        )
    finally:
        if process.poll() is None:  # the run goes on in the supervisor: stop it as Ctrl-C would
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=90)


def test_a_finished_runs_exit_code_says_what_it_means(
    kit: Kit, supervised: Supervised, narrow: BrowserContext
) -> None:
    """Issue 36 item 8: the page said "ended exit 2" without saying that 2 means the run is
    complete and some attempts were not correct (b makes no change here: its attempts fail)."""
    held_cohort(kit)
    process = start_run(kit, supervised, parallel=2, held=2)
    try:
        (kit.ctl / "go").touch()
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 2, stderr
        page = narrow.new_page()
        page.goto(f"{supervised.url}#/lab")
        listed = page.locator(".labruns li", has_text="exit 2")
        expect(listed).to_contain_text("exit 2 (complete, some attempts not correct)")
        listed.get_by_role("link").click()
        expect(page.locator('[data-view="lab-run"] .facts .ending')).to_have_text(
            "exit 2 (complete, some attempts not correct)"
        )
        assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=90)
