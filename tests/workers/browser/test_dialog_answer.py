"""`browser_dialog_answer` over a real socket: the controller answers page dialogs, with text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .socket_harness import SEAT, Client, client, records

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def viewing(served: tuple[str, Path], url: str, count: int) -> tuple[int, list[Client]]:
    """A new tab at `url` viewed by `count` clients, the first its controller and following
    its rows (`browser_tabs` pushes)."""
    clients = [await client(served) for _ in range(count)]
    owner = clients[0]
    tab = (await owner.ask({"kind": "browser_open", "seat": SEAT, "url": url}))["tab"]
    assert (await owner.ask({"kind": "browser_tabs", "seat": SEAT}))["ok"]
    for viewer in clients:
        assert (await viewer.ask({"kind": "browser_view", "seat": SEAT, "tab": tab}))["ok"]
        await viewer.until(lambda v=viewer: v.frames)
    await owner.send({"kind": "browser_control", "take": True})
    await owner.until(lambda: owner.kinds("browser_view")[-1]["controller"] is not None)
    return tab, clients


def pushed_row(a: Client, tab: int) -> dict[str, Any] | None:
    """The tab's row in the newest `browser_tabs` push."""
    pushes = a.kinds("browser_tabs")
    rows = pushes[-1]["rows"] if pushes else []
    return next((r for r in rows if r["number"] == tab), None)


async def dialog_shown(a: Client, tab: int, dialog: dict[str, str]) -> None:
    await a.until(lambda: (row := pushed_row(a, tab)) is not None and row["dialog"] == dialog)


async def tap(a: Client) -> None:
    for seq, down in ((1, True), (2, False)):
        press = {"press": {"x": 100, "y": 100, "button": "left", "down": down}}
        await a.send({"kind": "browser_input", "seq": seq, "event": press})


async def current_row(a: Client, tab: int) -> dict[str, Any]:
    """The tab's row as a fresh `browser_tabs` reply has it (every earlier message handled)."""
    rows = (await a.ask({"kind": "browser_tabs", "seat": SEAT}))["tabs"]["rows"]
    row: dict[str, Any] = next(r for r in rows if r["number"] == tab)
    return row


async def test_a_prompt_is_answered_with_text_and_a_watcher_cannot(
    served: tuple[str, Path], site: str
) -> None:
    tab, (owner, watcher) = await viewing(served, f"{site}/prompt", 2)
    await tap(owner)
    asking = {"kind": "prompt", "message": "your name?"}
    await dialog_shown(owner, tab, asking)

    answer = {"kind": "browser_dialog_answer", "accept": True, "text": "Ada Lovelace ✓"}
    refused = await watcher.ask(answer)
    assert refused == {
        "ok": False, "why": "only the tab's controller may do this; take control first",
    }  # fmt: skip
    await watcher.send(answer)
    assert "controller" in (await watcher.error("browser_dialog_answer"))["why"]
    assert (await current_row(owner, tab))["dialog"] == asking

    assert await owner.ask(answer) == {"ok": True}
    await owner.until(
        lambda: (
            (row := pushed_row(owner, tab)) is not None
            and row["dialog"] is None
            and row["title"] == "name:Ada Lovelace ✓"
        )
    )
    landed = [r for r in records(served, "browser_dialog_answer") if r["landed"]]
    assert (landed[-1]["tab"], landed[-1]["accept"], landed[-1]["chars"]) == (tab, True, 14)
    refusals = [r for r in records(served, "browser_dialog_answer") if not r["landed"]]
    assert refusals[-1]["tab"] == tab
    assert "Lovelace" not in served[1].read_text()
    await owner.close()
    await watcher.close()


async def test_an_alert_accepted_then_a_confirm_dismissed_is_false(
    served: tuple[str, Path], site: str
) -> None:
    tab, (owner,) = await viewing(served, f"{site}/dialogs", 1)
    await tap(owner)
    await dialog_shown(owner, tab, {"kind": "alert", "message": "hello there"})
    await owner.send({"kind": "browser_dialog_answer", "accept": True})  # silent when it lands
    await dialog_shown(owner, tab, {"kind": "confirm", "message": "sure?"})
    assert await owner.ask({"kind": "browser_dialog_answer", "accept": False}) == {"ok": True}
    await owner.until(
        lambda: (
            (row := pushed_row(owner, tab)) is not None
            and row["dialog"] is None
            and row["title"] == "no"
        )
    )
    assert owner.kinds("error") == []
    await owner.close()


async def test_a_prompt_dismissed_gets_null_whatever_the_text(
    served: tuple[str, Path], site: str
) -> None:
    tab, (owner,) = await viewing(served, f"{site}/prompt", 1)
    await tap(owner)
    await dialog_shown(owner, tab, {"kind": "prompt", "message": "your name?"})
    dismiss = {"kind": "browser_dialog_answer", "accept": False, "text": "ignored"}
    assert await owner.ask(dismiss) == {"ok": True}
    await owner.until(
        lambda: (row := pushed_row(owner, tab)) is not None and row["title"] == "no name"
    )
    await owner.close()


async def test_refusals_say_why_and_leave_the_dialog_up(
    served: tuple[str, Path], site: str
) -> None:
    loose = await client(served)
    accept = {"kind": "browser_dialog_answer", "accept": True}
    assert await loose.ask(accept) == {
        "ok": False, "why": "this connection is not viewing a browser tab",
    }  # fmt: skip

    tab, (owner,) = await viewing(served, f"{site}/prompt", 1)
    assert await owner.ask(accept) == {"ok": False, "why": f"tab {tab} has no dialog open"}
    await owner.send(accept)
    assert (await owner.error("browser_dialog_answer"))["why"] == f"tab {tab} has no dialog open"

    await tap(owner)
    asking = {"kind": "prompt", "message": "your name?"}
    await dialog_shown(owner, tab, asking)
    not_text = await owner.ask({**accept, "text": 42})
    assert not_text == {"ok": False, "why": "text must be a string (or null)"}
    too_long = await owner.ask({**accept, "text": "é" * 40_000})
    assert too_long == {
        "ok": False, "why": "text is 80000 bytes of UTF-8; a dialog answer is at most 64 KiB",
    }  # fmt: skip
    assert (await current_row(owner, tab))["dialog"] == asking

    assert await owner.ask({**accept, "text": "x" * 65_536}) == {"ok": True}
    await owner.until(lambda: (row := pushed_row(owner, tab)) is not None and row["dialog"] is None)
    await loose.close()
    await owner.close()
