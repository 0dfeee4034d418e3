"""Real browser tests of the web client: Debian's Chromium (driven by Playwright) against a real
`forge supervise` started here, one per module. Nothing is downloaded: `executable_path` is the
system Chromium and Playwright's own browsers are never installed."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from forge.testing.pages import OnePage, served
from forge.testing.person import SupervisorProcess

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PHONE: dict[str, Any] = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 3,
    "has_touch": True,
    "is_mobile": True,
}
DESKTOP: dict[str, Any] = {"viewport": {"width": 1280, "height": 800}}
SEAT = "acme/proj/lead"
TIMEOUT_MS = 30_000
expect.set_options(timeout=TIMEOUT_MS)


@contextmanager
def chromium(extra_args: Sequence[str] = ()) -> Iterator[Browser]:
    """Debian's Chromium, launched with `CHROMIUM_ARGS` and `extra_args`."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *extra_args]
        )
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium for one module's tests.

    This replaces pytest-playwright's session-wide `browser`: its sync Playwright keeps an event
    loop marked running for the whole session, and every asyncio test that ran after it failed
    ("Runner.run() cannot be called from a running event loop"). Stopped here, it is gone before
    the next module's tests run."""
    with chromium() as launched:
        yield launched


RECORDER = """#!/bin/sh
# A "shell" that keeps every byte it is sent, exactly: raw, no echo, appended to typed.bin.
stty raw -echo
exec cat >> typed.bin
"""


class Supervised(SupervisorProcess):
    """`forge supervise` as a person runs it, with two projects: `proj` (a plain shell) and
    `typed` (whose shell keeps every byte it is sent in `typed`)."""

    def __init__(self, root: Path, extra: str = "") -> None:
        """`extra` is more of forge.toml (a `[dictate]` table, say)."""
        project = root / "proj"
        project.mkdir(exist_ok=True)
        typed = root / "typed"
        typed.mkdir(exist_ok=True)
        recorder = root / "record.sh"
        recorder.write_text(RECORDER, encoding="utf-8")
        recorder.chmod(0o755)
        self.typed = typed / "typed.bin"
        super().__init__(
            root,
            f'[[projects]]\norg = "acme"\nname = "proj"\npath = "{project}"\nshell = "/bin/sh"\n'
            f'[[projects]]\norg = "acme"\nname = "typed"\npath = "{typed}"\n'
            f'shell = "{recorder}"\n' + extra,
        )

    def pair(self, context: BrowserContext) -> None:
        """Pages of `context` hold the token, as after opening `forge pair`'s URL once."""
        context.add_init_script(f"localStorage.setItem('forge.token', {self.token!r})")


@pytest.fixture(scope="module")
def supervised(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervised]:
    server = Supervised(tmp_path_factory.mktemp("web"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def desktop(browser: Browser, supervised: Supervised) -> Iterator[BrowserContext]:
    context = browser.new_context(**DESKTOP)
    supervised.pair(context)
    yield context
    context.close()


@pytest.fixture
def phone(browser: Browser, supervised: Supervised) -> Iterator[BrowserContext]:
    context = browser.new_context(**PHONE)
    supervised.pair(context)
    yield context
    context.close()


def open_terminal(page: Page, supervised: Supervised) -> None:
    """The seat's terminal, live and ours to type in."""
    page.goto(f"{supervised.url}#/seat/acme/proj/lead/terminal")
    expect(page.locator("[data-link]")).to_have_attribute("data-link", "open")
    expect(page.locator("[data-role]")).to_have_attribute("data-role", "controller")


SCREEN_JS = """() => {
    const term = window.forgeTerminal && window.forgeTerminal.term;
    if (!term) return "";
    const buffer = term.buffer.active;
    const rows = [];
    for (let i = 0; i < buffer.length; i++) rows.push(buffer.getLine(i).translateToString(true));
    return rows.join("\\n");
}"""


def screen_text(page: Page) -> str:
    """The rows xterm.js holds (what it renders), read from its buffer."""
    text: str = page.evaluate(SCREEN_JS)
    return text


def poll(
    page: Page,
    function: str,
    arg: Any = None,
    *,
    timeout_ms: int = TIMEOUT_MS,
    describe: str | None = None,
) -> None:
    """Wait until `function(arg)`, evaluated in the page, is true (within `timeout_ms`); on
    failure the message carries what `describe` (a JS function) reads from the page.

    Playwright's own `wait_for_function` re-evaluates its predicate with eval inside the page,
    which this page's CSP (no 'unsafe-eval') refuses after the first try; `evaluate` goes
    through the DevTools protocol, so the page's state is read from here, every 50 ms."""
    deadline = time.monotonic() + timeout_ms / 1000
    while not page.evaluate(function, arg):
        if time.monotonic() > deadline:
            seen = f"; the page shows {page.evaluate(describe)!r}" if describe else ""
            raise AssertionError(f"still false after {timeout_ms} ms: {function} ({arg!r}){seen}")
        page.wait_for_timeout(50)


def wait_for_screen(page: Page, pattern: str, *, without: str | None = None) -> None:
    """Wait until a row matches `pattern` (a multiline regex) and `without` is nowhere."""
    poll(
        page,
        f"""([pattern, without]) => {{
            const text = ({SCREEN_JS})();
            return new RegExp(pattern, "m").test(text) && !(without && text.includes(without));
        }}""",
        [pattern, without],
    )


class ColourPage(OnePage):
    """A page that turns red where it is tapped or clicked (and says so in its title)."""

    BODY = b"""<!doctype html><html><head><meta name="viewport" content="width=device-width">
<title>blue</title><style>html,body{margin:0;height:100%;background:#0000ff}</style></head>
<body><script>
function hit(){document.body.style.background='#ff0000';document.title='red';}
document.addEventListener('pointerdown', hit);
document.addEventListener('touchstart', hit);
</script></body></html>"""


@pytest.fixture(scope="module")
def colour_page() -> Iterator[str]:
    with served(ColourPage) as url:
        yield url
