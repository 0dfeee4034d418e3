"""Screenshots of each view at phone and desktop size, for the README (docs/img/web-*.png).

Run from the repository: `.venv/bin/python -m tests.web.shots [VIEW ...]` (`seat`: home, the
seat's panes, settings; `agent`: an agent seat streaming an answer, a command held on its ask, a
question, a prompt queued behind a running turn, and after the interrupt; `lab`: the Lab page;
`report`: a finished run's report.html; all by default). It starts its own `forge supervise` and
a small local page for the browser view, like the tests do; the agent is the real Claude Code CLI
against forge's scripted model server; the Lab's run is the Lab kit's cohort handed over by
`forge evaluate`, held at its gate while it is shot, then stopped.
"""

from __future__ import annotations

import signal
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect, sync_playwright

from forge.testing.agent_cli import cli_env, unsteered
from forge.testing.model_thread import ModelServerThread
from tests.lab.kit import Kit
from tests.lab.reportrun import finished_run

from .agentkit import AGENT_MS
from .conftest import CHROMIUM, CHROMIUM_ARGS, DESKTOP, Supervised, wait_for_screen
from .labrun import held_cohort, start_run
from .trees import seat_repository

OUT = Path(__file__).resolve().parents[2] / "docs" / "img"
PHONE_SHOT: dict[str, Any] = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 2,
    "has_touch": True,
    "is_mobile": True,
}


class Demo(BaseHTTPRequestHandler):
    BODY = b"""<!doctype html><html><head><meta name="viewport" content="width=device-width">
<title>build report</title><style>body{font:18px system-ui;margin:2em;background:#fff;color:#222}
h1{color:#0969da}li{margin:.4em 0}</style></head><body><h1>Build report</h1>
<p>All 412 tests passed in 3 min 12 s.</p><ul><li>lint: clean</li><li>types: clean</li>
<li>bundle: 524 KB</li></ul></body></html>"""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(self.BODY)

    def log_message(self, format: str, *args: Any) -> None:
        pass


PLAN_SHOWN = """# Plan: settings from the phone

Goal: a person fixes a config key without a text editor.

## Steps
1. Draw a control per key from its `edit` shape.
2. Save with the document's fingerprint; clear the draft on our own `settings_saved`.
3. On `stale`, say someone else saved and offer a reload.

> The server is the authority: the page shows the loader's own message.

```
make check && git commit
```
"""


def shoot(page: Page, supervised: Supervised, demo: str, size: str) -> None:
    base = f"{supervised.url}#/seat/acme/proj/lead"
    page.goto(f"{base}/terminal")
    expect(page.locator("[data-role]")).to_have_attribute("data-role", "controller")
    typing = page.locator(".ime") if size == "phone" else page.locator(".term")
    typing.click()
    page.keyboard.type("ls -la /usr/lib | head -20\n")
    wait_for_screen(page, r"^total ")
    page.screenshot(path=OUT / f"web-terminal-{size}.png")
    page.goto(f"{base}/browser")
    address = page.get_by_label("address")
    address.fill(demo)
    address.press("Enter")
    expect(page.locator(".browserpane [data-role]")).to_have_attribute("data-role", "controller")
    # The take gives this page the layout: frames at its own width follow.
    width = page.viewport_size["width"] if page.viewport_size else 0
    expect(page.locator("canvas.page")).to_have_attribute("data-page-width", str(width))
    page.screenshot(path=OUT / f"web-browser-{size}.png")
    page.goto(f"{base}/processes")
    expect(page.locator("table.processes")).to_be_visible(timeout=30_000)
    page.screenshot(path=OUT / f"web-processes-{size}.png")
    page.goto(f"{supervised.url}#/")
    expect(page.locator(".seat").first).to_be_visible()
    page.screenshot(path=OUT / f"web-home-{size}.png")
    page.goto(f"{base}/changes")
    page.locator('[data-file="app.py"]').get_by_role("button").click()
    expect(page.locator('[data-diff-file="app.py"] [data-line=added]')).to_be_visible()
    page.screenshot(path=OUT / f"web-changes-{size}.png")
    page.goto(f"{base}/docs")
    page.get_by_label("Document").fill("plan.md")
    page.get_by_role("button", name="Read").click()
    expect(page.locator("[data-markdown]")).to_be_visible()
    page.screenshot(path=OUT / f"web-docs-{size}.png")
    page.goto(f"{supervised.url}#/settings")
    expect(page.locator("fieldset").first).to_be_visible()
    page.locator('[data-key="server.port"] input').fill("70000")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator('[data-key="server.port"] [data-refusal]')).to_be_visible()
    page.locator('[data-key="log.level"] select').select_option("debug")
    page.screenshot(path=OUT / f"web-settings-{size}.png")


AGENT_ANSWER = """`app.py` is a small script: it prints one word.

```python
print('new')
```

The working tree changed that word from `'old'`; the change is not committed yet."""


def agent_turn(page: Page, text: str) -> None:
    page.get_by_label("prompt", exact=True).fill(text)
    page.get_by_role("button", name="Send", exact=True).click()


def agent_idle(page: Page) -> None:
    expect(page.locator("[data-turn-state]")).to_have_text("idle", timeout=AGENT_MS)


COLOUR = {"question": "Which colour should the banner be?", "header": "Colour",
          "options": ["Red", "Blue", "Green"]}  # fmt: skip


def shoot_agent(page: Page, supervised: Supervised, model: ModelServerThread, size: str) -> None:
    """An agent seat in each state a person meets: an answer streaming (a Read and thinking
    above it), a command held on its ask, a question, a prompt queued behind a running turn
    with Interrupt offered, and the interrupted turn with the queued prompt's answer."""
    app_py = supervised.root / "web" / "app.py"
    # One script for the whole session: the model server numbers its tool calls by turn, and a
    # second script on the same session would repeat an id the CLI already holds.
    model.play(
        {
            "when": {"user_text": "What does app.py do?"},
            "content": [
                {"think": "Read app.py first."},
                {"tool": {"name": "Read", "input": {"file_path": str(app_py)}}},
            ],
        },
        {"when": {"tool_result": "Read"}, "say": AGENT_ANSWER, "stall": {"after": 4}},
        {"when": {"user_text": "Run it"}, "bash": "python3 app.py"},
        {"when": {"tool_result": "Bash"}, "say": "It printed `new`."},
        {"when": {"user_text": "banner"}, "ask": COLOUR},
        {"when": {"tool_result": "AskUserQuestion"}, "say": "Blue it is."},
        {
            "when": {"user_text": "Summarise"},
            "say": "Reading every module in turn, this will take a while.",
            "stall": {"after": 2},
        },
        {"when": {"user_text": "list the tests"}, "say": "There are two tests: `test_app.py`."},
    )
    page.goto(f"{supervised.url}#/")
    card = page.locator('[data-project="acme/web"]')
    card.get_by_label("seat label for acme/web").fill(size)
    card.get_by_role("button", name="Start agent").click()
    expect(page.locator("[data-agent-pane]")).to_be_visible(timeout=AGENT_MS)
    agent_turn(page, "What does app.py do?")
    model.wait_stalled(AGENT_MS / 1000)
    expect(page.locator("[data-streaming]")).to_contain_text("small script", timeout=AGENT_MS)
    page.screenshot(path=OUT / f"web-agent-stream-{size}.png")
    model.release()
    agent_idle(page)

    agent_turn(page, "Run it, please.")
    ask = page.locator('[data-ask-kind="permission"]')
    expect(ask).to_be_visible(timeout=AGENT_MS)
    page.screenshot(path=OUT / f"web-agent-{size}.png")
    ask.get_by_role("button", name="Allow once").click()
    agent_idle(page)

    agent_turn(page, "Make the banner stand out.")
    question = page.locator('[data-ask-kind="question"]')
    expect(question).to_be_visible(timeout=AGENT_MS)
    page.screenshot(path=OUT / f"web-agent-question-{size}.png")
    question.get_by_role("button", name="Blue").click()
    agent_idle(page)

    agent_turn(page, "Summarise the whole repository.")
    model.wait_stalled(AGENT_MS / 1000)
    agent_turn(page, "Then list the tests.")
    expect(page.get_by_label("waiting prompts")).to_be_visible(timeout=AGENT_MS)
    page.screenshot(path=OUT / f"web-agent-queue-{size}.png")
    page.get_by_role("button", name="Interrupt").click()
    expect(page.locator(".msg.assistant").filter(has_text="two tests")).to_be_visible(
        timeout=AGENT_MS
    )
    agent_idle(page)
    page.screenshot(path=OUT / f"web-agent-interrupt-{size}.png")


def shoot_lab(page: Page, supervised: Supervised, size: str) -> None:
    """A run with one attempt recorded and two held at the gate, their process trees live."""
    page.goto(f"{supervised.url}#/lab")
    page.locator(".labruns li").first.get_by_role("link").click()
    expect(page.locator('table.attempts tr[data-state="recorded"]')).to_have_count(1)
    expect(page.locator("section.attemptprocs table.processes")).to_have_count(2)
    page.screenshot(path=OUT / f"web-lab-{size}.png")


def shoot_report(root: Path) -> None:
    """report.html of a finished run, opened from disk offline, one attempt unfolded."""
    report = finished_run(root).out / "report.html"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for size, options in (("desktop", DESKTOP), ("phone", PHONE_SHOT)):
            context = browser.new_context(**options, offline=True)
            page = context.new_page()
            page.goto(report.as_uri())
            page.locator("details.attempt#t1-a-rep-1").evaluate("(d) => { d.open = true; }")
            page.screenshot(path=OUT / f"lab-report-{size}.png", full_page=True)
            context.close()
        browser.close()


def main(views: list[str]) -> None:
    views = views or ["seat", "agent", "lab", "report"]
    OUT.mkdir(parents=True, exist_ok=True)
    if "report" in views:
        with tempfile.TemporaryDirectory() as root:
            shoot_report(Path(root))
        views = [v for v in views if v != "report"]
        if not views:
            return
    server = ThreadingHTTPServer(("127.0.0.1", 0), Demo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    demo = f"http://127.0.0.1:{server.server_address[1]}/"
    with tempfile.TemporaryDirectory() as root, ModelServerThread() as model:
        web = Path(root) / "web"
        web.mkdir()
        agent_project = f'[[projects]]\norg = "acme"\nname = "web"\npath = "{web}"\n'
        supervised = Supervised(Path(root), agent_project)
        supervised.env = unsteered(supervised.env) | cli_env(model.url, Path(root))
        seat_repository(supervised.root / "proj")
        seat_repository(web)
        (supervised.root / "proj" / "plan.md").write_text(PLAN_SHOWN, encoding="utf-8")
        supervised.start()
        run = None
        try:
            if "lab" in views:
                kit = Kit(Path(root) / "lab")
                held_cohort(kit, b_held=False)
                run = start_run(kit, supervised, parallel=2, held=2)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                for size, options in (("desktop", DESKTOP), ("phone", PHONE_SHOT)):
                    context = browser.new_context(**options)
                    supervised.pair(context)
                    page = context.new_page()
                    if "seat" in views:
                        shoot(page, supervised, demo, size)
                    if "agent" in views:
                        shoot_agent(page, supervised, model, size)
                    if "lab" in views:
                        shoot_lab(page, supervised, size)
                    context.close()
                browser.close()
        finally:
            if run is not None:  # stopped as Ctrl-C stops it: the supervisor ends the attempts
                run.send_signal(signal.SIGINT)
                run.communicate(timeout=90)
            supervised.stop()
            server.shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
