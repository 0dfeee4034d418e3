"""The Lab page after `forge supervise` restarts (issue 36 item 8: its run list was empty): a run
that finished before the restart is listed again on a 360 px phone, with its status and what its
exit code means, and its page still shows its attempts."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.lab.kit import Kit, kill_all, marker_processes

from .conftest import PHONE, Supervised
from .labrun import held_cohort, start_run

NARROW = {**PHONE, "viewport": {"width": 360, "height": 740}}


@pytest.fixture(scope="module")
def supervised(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervised]:
    """A supervisor of this module's own: its test restarts it."""
    server = Supervised(tmp_path_factory.mktemp("labrestart"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def kit(tmp_path: Path) -> Iterator[Kit]:
    kit = Kit(tmp_path)
    yield kit
    leftovers = marker_processes(str(kit.ctl))
    kill_all(leftovers)
    assert leftovers == [], "a test left processes of its attempts running"


def test_a_finished_run_is_listed_again_after_the_supervisor_restarts(
    kit: Kit, supervised: Supervised, browser: Browser
) -> None:
    held_cohort(kit)
    process = start_run(kit, supervised, parallel=2, held=2)
    try:
        (kit.ctl / "go").touch()
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 2, stderr
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=90)
    supervised.stop()
    supervised.start()

    context = browser.new_context(**NARROW)
    supervised.pair(context)
    page = context.new_page()
    page.goto(f"{supervised.url}#/lab")
    listed = page.locator(".labruns li")
    expect(listed).to_have_count(1)
    expect(listed).to_have_attribute("data-status", "complete")
    expect(listed).to_contain_text("exit 2 (complete, some attempts not correct)")
    expect(listed.locator("[data-progress]")).to_have_text("4/4")
    listed.get_by_role("link").click()
    view = page.locator('[data-view="lab-run"]')
    expect(view.locator(".facts .ending")).to_have_text(
        "exit 2 (complete, some attempts not correct)"
    )
    expect(page.locator('table.attempts tr[data-state="recorded"]')).to_have_count(4)
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    context.close()
