"""What a finished run leaves for its reader: transcripts, report.md's reasons and links, and
report.html, from one real run (`reportrun.finished_run`, module-scoped: two attempts)."""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from .kit import Kit
from .reportrun import HOSTILE, TOKEN, finished_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Kit:
    return finished_run(tmp_path_factory.mktemp("report-files"))


def attempt(kit: Kit, variant: str) -> Path:
    return kit.out / "attempts" / "t1" / variant / "rep-1"


def test_transcript_keeps_the_recipe_streams_redacted(run: Kit) -> None:
    record = run.record("t1", "a")
    assert record["transcript"] == {
        "stdout": "transcript/stdout.log",
        "stderr": "transcript/stderr.log",
        "stdoutNotKept": 0,
        "stderrNotKept": 0,
    }
    stderr = (attempt(run, "a") / "transcript" / "stderr.log").read_text()
    stdout = (attempt(run, "a") / "transcript" / "stdout.log").read_text()
    assert HOSTILE in stderr
    assert TOKEN not in stderr
    assert "token [REDACTED]" in stderr
    assert json.loads(stdout)["outcome"] == "completed"


def test_report_md_links_each_attempts_transcript_and_diff(run: Kit) -> None:
    report = (run.out / "report.md").read_text()
    links = re.findall(r"\]\((attempts/[^)]+)\)", report)
    assert "attempts/t1/a/rep-1/transcript/stdout.log" in links
    assert "attempts/t1/a/rep-1/transcript/stderr.log" in links
    assert "attempts/t1/a/rep-1/changes.diff" in links
    assert all((run.out / link).is_file() for link in links)


def test_a_failing_check_shows_both_streams(run: Kit) -> None:
    report = (run.out / "report.md").read_text()
    section = report.split("- t1 a rep-1:")[1].split("- t1 b rep-1:")[0]
    assert "failed check `tool` (candidate view, exit 127)" in section
    assert "checking the build" in section
    assert "python: not found" in section
    assert "required checks: failed" in section


def test_a_timed_out_attempt_names_its_step_and_its_checks_not_run(run: Kit) -> None:
    report = (run.out / "report.md").read_text()
    section = report.split("- t1 b rep-1:")[1]
    assert re.search(r"the recipe's coding step \(coding-1\) timed out after \d+\.\d s", section)
    assert "required checks: not run (the change was not verified: timed-out)" in section
    assert run.record("t1", "b")["requiredChecksPass"] is None
    assert run.report()["variants"][1]["requiredChecksN"] == 0
    assert "(required checks 0/0, n=0)" in report


class _Page(HTMLParser):
    """What an HTML page would run or load: script elements, event handlers, external URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts = 0
        self.handlers: list[str] = []
        self.loads: list[str] = []
        self.pre_text: list[str] = []
        self._in_pre = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.scripts += tag == "script"
        self._in_pre = self._in_pre or tag == "pre"
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append(name)
            if name in ("src", "href") and value and re.match(r"[a-z]+:", value):
                self.loads.append(value)

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre":
            self._in_pre = False

    def handle_data(self, data: str) -> None:
        if self._in_pre:
            self.pre_text.append(data)


def test_report_html_is_self_contained_and_attempt_text_is_inert(run: Kit) -> None:
    html = (run.out / "report.html").read_text()
    page = _Page()
    page.feed(html)
    assert page.scripts == 0
    assert page.handlers == []
    assert [u for u in page.loads if not u.startswith("http://www.w3.org/")] == []
    assert "default-src 'none'" in html
    assert HOSTILE in "".join(page.pre_text)  # shown as text, whole
    assert TOKEN not in html


def test_report_html_holds_the_head_to_head_grid_and_each_attempt(run: Kit) -> None:
    html = (run.out / "report.html").read_text()
    assert "<svg" in html
    assert "b - a:" in html
    assert 'id="grid"' in html
    assert "python: not found" in html
    assert "the recipe&#39;s coding step (coding-1) timed out after" in html
    assert '<span class="add">+    return a + b</span>' in html
    assert "calc.py" in html
    assert os.path.getsize(run.out / "report.html") < 200_000
