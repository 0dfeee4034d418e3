"""What the Agent pane's browser tests share: a `forge supervise` whose agents talk to the
scripted model server, and the steps on the pane (start an agent, prompt, read its answer)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from forge.testing.agent_cli import cli_env, unsteered
from forge.testing.model_thread import ModelServerThread

from .conftest import Supervised

AGENT_MS = 180_000
"""How long the CLI may take to start or answer on a loaded machine."""
AGENT_S = AGENT_MS / 1000


def agent_project(root: Path) -> Path:
    """An empty git repository, the project `acme/web` the agents work in."""
    path = root / "web"
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    return path


def agent_supervised(
    root: Path, model: ModelServerThread, project: Path, extra: str = ""
) -> Supervised:
    """`forge supervise` (not started) with `acme/web` at `project`, its agents pointed at the
    model server; `extra` is more of forge.toml."""
    server = Supervised(
        root, f'[[projects]]\norg = "acme"\nname = "web"\npath = "{project}"\n' + extra
    )
    server.env = unsteered(server.env) | cli_env(model.url, root)
    return server


def start_agent(page: Page, supervised: Supervised, label: str) -> None:
    """From Home: the seat's label, Start agent, and the Agent pane once the CLI runs."""
    page.goto(supervised.url)
    card = page.locator('[data-project="acme/web"]')
    card.get_by_label("seat label for acme/web").fill(label)
    card.get_by_role("button", name="Start agent").click()
    expect(page.locator("[data-agent-pane]")).to_be_visible(timeout=AGENT_MS)


def open_seat(page: Page, supervised: Supervised, label: str) -> None:
    """The seat's first view, which is its Agent pane."""
    page.goto(f"{supervised.url}#/seat/acme/web/{label}")
    expect(page.locator("[data-agent-pane]")).to_be_visible(timeout=AGENT_MS)


def prompt(page: Page, text: str) -> None:
    page.get_by_label("prompt", exact=True).fill(text)
    page.get_by_role("button", name="Send", exact=True).click()


def idle(page: Page) -> None:
    expect(page.locator("[data-turn-state]")).to_have_text("idle", timeout=AGENT_MS)


def said(page: Page, text: str) -> Locator:
    """The assistant's text blocks that hold `text`."""
    return page.locator(".msg.assistant").filter(has_text=text)


def fits(page: Page) -> bool:
    return bool(page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth"))


def on_screen(page: Page, selector: Locator) -> None:
    """The element lies wholly inside the viewport: a thumb can reach it without scrolling."""
    box = selector.bounding_box()
    size = page.viewport_size
    assert box is not None
    assert size is not None
    assert box["x"] >= 0, box
    assert box["x"] + box["width"] <= size["width"], box
    assert box["y"] >= 0, box
    assert box["y"] + box["height"] <= size["height"], box
