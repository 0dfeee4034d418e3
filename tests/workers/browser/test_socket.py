"""The browser verbs over a real socket: a supervisor in this process, real hosts and Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.wire.binary import FORMAT_JPEG, FORMAT_WEBP

from .socket_harness import SEAT, Client, browser_host, client, records

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_attach_answers_view_then_nav_state_then_a_key_frame(
    served: tuple[str, Path], site: str
) -> None:
    a = await client(served)
    opened = await a.ask({"kind": "browser_open", "seat": SEAT, "url": f"{site}/button"})
    assert opened["ok"]
    tab = opened["tab"]
    assert await a.ask({"kind": "browser_view", "seat": SEAT}) == {
        "ok": True, "profile": "acme/default", "tab": tab,
    }  # fmt: skip
    # The newest kept frame comes first (BR03); the attach's key frame is among the first.
    frame = await a.until(lambda: next((f for f in a.frames if f.key), None))
    assert (frame.tab, frame.key, frame.image_format) == (tab, True, FORMAT_WEBP)
    order = [m["kind"] for m in a.messages if m["kind"].startswith("browser_")]
    assert order[:2] == ["browser_view", "browser_nav_state"]
    (view,) = a.kinds("browser_view")
    assert view == {
        "kind": "browser_view", "id": frame.profile, "profile": "acme/default", "tab": tab,
        "controller": None, "viewers": 1, "viewer": view["viewer"],
    }  # fmt: skip
    attach = records(served, "browser_attach")[-1]
    assert (attach["profile"], attach["tab"], attach["same_surface"]) == (
        "acme/default",
        tab,
        False,
    )
    await a.close()


async def test_the_controller_taps_a_watcher_is_refused(
    served: tuple[str, Path], site: str
) -> None:
    a, b, c = [await client(served) for _ in range(3)]
    tab = (await a.ask({"kind": "browser_open", "seat": SEAT, "url": f"{site}/button"}))["tab"]
    for viewer in (a, b, c):
        assert (await viewer.ask({"kind": "browser_view", "seat": SEAT, "tab": tab}))["ok"]
        await viewer.until(lambda v=viewer: v.frames)
    await a.send({"kind": "browser_control", "take": True})
    mine = a.kinds("browser_view")[-1]["viewer"]
    for viewer in (a, b, c):
        await viewer.until(
            lambda v=viewer: (
                v.kinds("browser_view") and v.kinds("browser_view")[-1]["controller"] == mine
            )
        )
    press = {"press": {"x": 200, "y": 150, "button": "left", "down": True}}
    await b.send({"kind": "browser_input", "seq": 1, "event": press})
    assert "controller" in (await b.error("browser_input"))["why"]
    assert records(served, "browser_input_refused")[-1]["gesture"] == "press"
    await b.send({"kind": "browser_input", "seq": 2, "event": {"text": {"text": "hunter2"}}})
    await b.until(lambda: len(b.kinds("error")) == 2)
    refused = records(served, "browser_input_refused")[-1]
    assert (refused["gesture"], refused["chars"]) == ("text", 7)
    assert "hunter2" not in served[1].read_text()

    before = a.frames[-1]
    assert before.pixel(200, 150)[0] > 200
    release = {"press": {"x": 200, "y": 150, "button": "left", "down": False}}
    await a.send({"kind": "browser_input", "seq": 1, "event": press})
    await a.send({"kind": "browser_input", "seq": 2, "event": release})
    blue = await a.until(
        lambda: next((f for f in a.frames if f.seq > before.seq and f.pixel(200, 150)[2] > 200),
                     None)
    )  # fmt: skip
    assert blue.tab == tab
    await c.until(lambda: any(f.seq >= blue.seq for f in c.frames))

    await b.send({"kind": "browser_control", "take": True})
    await a.until(lambda: a.kinds("browser_view")[-1]["controller"] != mine)
    await a.send({"kind": "browser_input", "seq": 3, "event": press})
    await a.error("browser_input")
    released_before = len(records(served, "browser_role_released"))
    await b.send({"kind": "browser_control", "take": False})
    await b.send({"kind": "browser_control", "take": False})
    await a.until(lambda: a.kinds("browser_view")[-1]["controller"] is None)
    await b.ask({"kind": "browser_tabs", "seat": SEAT})
    assert len(records(served, "browser_role_released")) == released_before + 1
    for viewer in (a, b, c):
        await viewer.close()


async def test_a_reattached_viewer_never_sees_the_tabs_seq_run_backwards(
    served: tuple[str, Path], site: str
) -> None:
    """Issue #13 item 4: a detach stops the tab's pump and a re-attach starts a new one; the
    viewer first gets the frame the supervisor kept from the old pump, and the new pump used to
    number from 1 again (a viewer saw seq 2, 1, 2). B05: seq is monotonic per tab."""
    a = await client(served)
    tab = (await a.ask({"kind": "browser_open", "seat": SEAT, "url": f"{site}/canvas"}))["tab"]
    assert (await a.ask({"kind": "browser_view", "seat": SEAT, "tab": tab}))["ok"]
    await a.until(lambda: len(a.frames) >= 3)
    await a.send({"kind": "browser_detach"})
    await settled(a)  # the host has been told nobody views the tab: its pump is stopped
    before, count = a.frames[-1].seq, len(a.frames)
    assert (await a.ask({"kind": "browser_view", "seat": SEAT, "tab": tab}))["ok"]
    # The kept frame, then the new pump's (the canvas animates): its motion may come before its
    # key frame, which a loaded machine can hold back for seconds; three are enough to see order.
    await a.until(lambda: len(a.frames) >= count + 3)
    again = [f.seq for f in a.frames[count:]]
    assert again == sorted(set(again)), again
    assert again[0] >= before, (before, again)
    await a.close()


async def test_a_gone_page_is_refused_with_the_tabs_open_now(served: tuple[str, Path]) -> None:
    a = await client(served)
    answer = await a.ask({"kind": "browser_view_page", "seat": SEAT, "target": "NOPE"})
    assert answer["ok"] is False
    assert answer["target"] == "NOPE"
    assert [row["number"] for row in answer["tabs"]]
    assert records(served, "browser_attach_refused")[-1]["why"] == answer["why"]
    await a.close()


async def test_jpeg_is_sent_only_to_clients_that_asked(served: tuple[str, Path], site: str) -> None:
    plain, jpeg = await client(served), await client(served, "?formats=webp,jpeg")
    tab = (await plain.ask({"kind": "browser_open", "seat": SEAT, "url": f"{site}/canvas"}))["tab"]
    for viewer in (plain, jpeg):
        assert (await viewer.ask({"kind": "browser_view", "seat": SEAT, "tab": tab}))["ok"]
    await jpeg.until(lambda: any(f.image_format == FORMAT_JPEG for f in jpeg.frames))
    await plain.until(lambda: len([f for f in plain.frames if not f.key]) >= 3)
    assert {f.image_format for f in plain.frames} == {FORMAT_WEBP}
    # After the newest kept frame an attach starts with, WebP reaches it only as key frames.
    assert all(f.key for f in jpeg.frames[1:] if f.image_format == FORMAT_WEBP)
    await plain.close()
    await jpeg.close()


async def test_a_file_chooser_asks_the_controller_only(served: tuple[str, Path], site: str) -> None:
    owner, watcher = await client(served), await client(served)
    tab = (await owner.ask({"kind": "browser_open", "seat": SEAT, "url": f"{site}/file"}))["tab"]
    for viewer in (owner, watcher):
        assert (await viewer.ask({"kind": "browser_view", "seat": SEAT, "tab": tab}))["ok"]
        await viewer.until(lambda v=viewer: v.frames)
    await owner.send({"kind": "browser_control", "take": True})
    await owner.until(lambda: owner.kinds("browser_view")[-1]["controller"] is not None)
    for seq, down in ((1, True), (2, False)):
        press = {"press": {"x": 100, "y": 100, "button": "left", "down": down}}
        await owner.send({"kind": "browser_input", "seq": seq, "event": press})
    dialog = await owner.until(lambda: owner.kinds("browser_file_dialog"))
    ask = dialog[0]
    assert (ask["tab"], ask["multiple"]) == (tab, True)
    answer = {"kind": "browser_file_answer", "id": ask["id"],
              "files": [{"name": "a.txt", "data": "aGk="}]}  # fmt: skip
    await watcher.send(answer)
    assert "controller" in (await watcher.error("browser_file_answer"))["why"]
    assert watcher.kinds("browser_file_dialog") == []
    await owner.send(answer)
    tabs = await owner.ask({"kind": "browser_tabs", "seat": SEAT})
    assert tabs["ok"]

    def titled() -> bool:
        pushed = owner.kinds("browser_tabs")
        return bool(pushed) and any(r["title"] == "chose:1:a.txt:hi" for r in pushed[-1]["rows"])

    await owner.until(titled)
    await owner.close()
    await watcher.close()


async def take_control(a: Client) -> None:
    await a.send({"kind": "browser_control", "take": True})
    await a.until(lambda: a.kinds("browser_view")[-1]["controller"] is not None)


async def tap(a: Client, seq: int, x: float = 100, y: float = 100) -> None:
    for step, down in ((0, True), (1, False)):
        press = {"press": {"x": x, "y": y, "button": "left", "down": down}}
        await a.send({"kind": "browser_input", "seq": seq + step, "event": press})


async def test_history_moves_resizes_and_downloads(served: tuple[str, Path], site: str) -> None:
    a, b = await client(served), await client(served)
    tabs = await a.ask({"kind": "browser_tabs", "seat": SEAT})
    tab = (await a.ask({"kind": "browser_open", "seat": SEAT, "url": f"{site}/a"}))["tab"]

    def owned_row() -> object:
        rows = [r for t in a.kinds("browser_tabs") for r in t["rows"] if r["number"] == tab]
        return next((r for r in rows if r["owner"] == SEAT), None)

    assert tab not in [r["number"] for r in tabs["tabs"]["rows"]]
    await a.until(owned_row)
    for viewer in (a, b):
        assert (await viewer.ask({"kind": "browser_view", "seat": SEAT, "tab": tab}))["ok"]
        await viewer.until(lambda v=viewer: v.frames)
    await b.send({"kind": "browser_nav", "back": True})
    assert "controller" in (await b.error("browser_nav"))["why"]
    await take_control(a)
    await a.send({"kind": "browser_navigate", "url": f"{site}/download"})
    states = await a.until(lambda: [s for s in a.kinds("browser_nav_state") if s["can_back"]])
    assert states[-1]["tab"] == tab
    await b.until(lambda: any(s["can_back"] for s in b.kinds("browser_nav_state")))

    last = a.frames[-1].seq
    await b.send({"kind": "browser_resize", "width": 600, "height": 400, "scale": 1})
    await a.send({"kind": "browser_resize", "width": 1170, "height": 2532, "scale": 3})
    # The key frame may be superseded in the newest-wins queue: any frame laid out at 390 css px.
    laid_out = await a.until(
        lambda: next((f for f in a.frames if f.seq > last and f.page_width == 390), None)
    )
    assert (laid_out.page_width, laid_out.page_height) == (390, 844)
    assert laid_out.decoded_size() == (laid_out.width, laid_out.height)
    assert (laid_out.width, laid_out.height) in {(390, 844), (1170, 2532)}  # motion or key
    await b.send({"kind": "browser_resize", "width": 0, "height": 400, "scale": 1})
    assert "1..8192" in (await b.error("browser_resize"))["why"]

    await a.send({"kind": "browser_resize", "width": 1280, "height": 720, "scale": 1})
    await tap(a, 10)
    offer = await a.until(lambda: a.kinds("browser_download"))
    assert (offer[0]["tab"], offer[0]["name"], offer[0]["error"], offer[0]["dropped"]) == (
        tab, "report.txt", None, False,
    )  # fmt: skip
    assert b.kinds("browser_download") == []

    await a.send({"kind": "browser_nav", "back": True})
    await a.until(lambda: not a.kinds("browser_nav_state")[-1]["can_back"])
    await a.close()
    await b.close()


async def test_chromium_dying_is_said_to_viewers_and_a_reattach_works(
    served: tuple[str, Path], site: str
) -> None:
    a = await client(served)
    tab = (await a.ask({"kind": "browser_open", "seat": SEAT, "url": f"{site}/canvas"}))["tab"]
    assert (await a.ask({"kind": "browser_view", "seat": SEAT, "tab": tab}))["ok"]
    await a.until(lambda: a.frames)
    (chromium,) = [c for c in browser_host().children() if "chrom" in c.name().lower()]
    chromium.kill()
    failed = await a.until(lambda: a.kinds("browser_surface_failed"))
    assert failed[0]["tab"] == tab
    assert "SIGKILL" in failed[0]["reason"]
    answer = await a.ask({"kind": "browser_view", "seat": SEAT})
    assert answer["ok"], answer
    count = len(a.frames)
    await a.until(lambda: len(a.frames) > count and a.frames[-1].tab == answer["tab"])
    await a.close()


async def test_the_host_dying_is_said_to_viewers_and_a_reattach_works(
    served: tuple[str, Path], site: str
) -> None:
    a = await client(served)
    tab = (await a.ask({"kind": "browser_open", "seat": SEAT, "url": f"{site}/button"}))["tab"]
    assert (await a.ask({"kind": "browser_view", "seat": SEAT, "tab": tab}))["ok"]
    await a.until(lambda: a.frames)
    browser_host().kill()
    failed = await a.until(lambda: a.kinds("browser_surface_failed"))
    assert (failed[0]["tab"], failed[0]["reason"]) == (tab, "worker_crashed")
    answer = await a.ask({"kind": "browser_view", "seat": SEAT})
    assert answer["ok"], answer
    count = len(a.frames)
    await a.until(lambda: len(a.frames) > count)
    await a.close()


async def settled(a: Client) -> None:
    """Every message sent before has been handled: a later ask has been answered."""
    await a.ask({"kind": "browser_tabs", "seat": SEAT})


async def test_unattached_and_watcher_refusals_follow_their_rules(
    served: tuple[str, Path], site: str
) -> None:
    loose, owner, watcher = await client(served), await client(served), await client(served)
    move = {"move": {"x": 5, "y": 5}}
    press = {"press": {"x": 5, "y": 5, "button": "left", "down": True}}
    unattached_before = len(records(served, "browser_input_unattached"))
    await loose.send({"kind": "browser_input", "seq": 1, "event": move})
    await settled(loose)
    assert loose.kinds("error") == []
    await loose.send({"kind": "browser_input", "seq": 2, "event": press})
    assert "not viewing" in (await loose.error("browser_input"))["why"]
    assert len(records(served, "browser_input_unattached")) == unattached_before + 1
    await loose.send({"kind": "browser_control", "take": True})
    await loose.error("browser_control")
    unattached = records(served, "browser_control_unattached")[-1]
    assert (unattached["take"], unattached["reason"]) == (
        True,
        "this connection is not viewing a browser tab",
    )

    tab = (await owner.ask({"kind": "browser_open", "seat": SEAT, "url": f"{site}/button"}))["tab"]
    for viewer in (owner, watcher):
        assert (await viewer.ask({"kind": "browser_view", "seat": SEAT, "tab": tab}))["ok"]
    await take_control(owner)
    refused_before = len(records(served, "browser_input_refused"))
    for seq in range(1, 6):
        await watcher.send({"kind": "browser_input", "seq": seq, "event": move})
    await settled(watcher)
    assert len(watcher.kinds("error")) == 1  # O-BR3: refused moves answered once a second
    assert len(records(served, "browser_input_refused")) == refused_before
    for client_ in (loose, owner, watcher):
        await client_.close()
