"""What a browser tab asks of the person, in a real browser: a dialog shown and answered, a file
chooser answered from the page's own file input, a download saved through the browser; and the
"low latency" choice redialling with `formats=webp,jpeg`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from forge.testing.pages import OnePage, served

from .conftest import Supervised, poll
from .routing import routed, wait_until
from .test_browser import open_tab, wait_for_colour

HEAD = b"""<!doctype html><html><head><meta name="viewport" content="width=device-width">
<style>html,body{margin:0;height:100%;background:#0000ff}
input{position:fixed;inset:0;width:100%;height:100%;opacity:0}</style></head><body>"""
RED = "document.body.style.background='#ff0000';"
PAGES = {
    "/confirm": b"""<script>document.addEventListener('pointerdown', () => {
        if (confirm('delete the branch?')) """
    + RED.encode()
    + b"""});</script>""",
    "/file": b"""<input type=file id=f><script>f.addEventListener('change', async () => {
        if ((await f.files[0].text()) === 'chosen bytes') """
    + RED.encode()
    + b"""});</script>""",
    "/download": b"""<script>document.addEventListener('pointerdown', () => {
        const a = document.createElement('a');
        a.href = URL.createObjectURL(new Blob(['forge download']));
        a.download = 'note.txt'; a.click(); """
    + RED.encode()
    + b"""});</script>""",
    # Red once tapped, then two shades of red in turn: motion after the tap that the key frame a
    # redialled viewer is owed cannot swallow (a page red for good paints nothing more).
    "/pulse": b"""<script>document.addEventListener('pointerdown', () => {
        let shade = 0;
        setInterval(() => {
            document.body.style.background = ['#ff0000', '#f00000'][shade++ % 2];
        }, 100);
    }, {once: true});</script>""",
}


class AskingPage(OnePage):
    def body(self) -> bytes:
        return HEAD + PAGES.get(self.path.split("?")[0], b"") + b"</body></html>"


@pytest.fixture(scope="module")
def asking() -> Iterator[str]:
    with served(AskingPage, "") as url:
        yield url


def ready(page: Page, supervised: Supervised, url: str, label: str) -> None:
    open_tab(page, supervised, url, label)
    wait_for_colour(page, "blue")


def test_a_dialog_is_shown_and_answered(
    desktop: BrowserContext, supervised: Supervised, asking: str
) -> None:
    page = desktop.new_page()
    ready(page, supervised, f"{asking}/confirm", "asks")
    page.locator("canvas.page").click()
    dialog = page.get_by_role("dialog", name="page dialog")
    expect(dialog).to_contain_text("delete the branch?")
    dialog.get_by_role("button", name="OK").click()
    expect(dialog).to_have_count(0)
    wait_for_colour(page, "red")


def test_a_file_chooser_is_answered_from_this_device(
    desktop: BrowserContext, supervised: Supervised, asking: str, tmp_path: Path
) -> None:
    chosen = tmp_path / "chosen.txt"
    chosen.write_text("chosen bytes", encoding="utf-8")
    page = desktop.new_page()
    ready(page, supervised, f"{asking}/file", "files")
    page.locator("canvas.page").click()
    chooser = page.get_by_role("dialog", name="file chooser")
    expect(chooser).to_be_visible()
    chooser.get_by_label("files to send").set_input_files(chosen)
    chooser.get_by_role("button", name="Send", exact=True).click()
    wait_for_colour(page, "red")


def test_a_download_is_saved_through_this_browser(
    desktop: BrowserContext, supervised: Supervised, asking: str, tmp_path: Path
) -> None:
    page = desktop.new_page()
    ready(page, supervised, f"{asking}/download", "downloads")
    with page.expect_download() as saved:
        page.locator("canvas.page").click()
    assert saved.value.suggested_filename == "note.txt"
    target = tmp_path / "note.txt"
    saved.value.save_as(target)
    assert target.read_text(encoding="utf-8") == "forge download"
    expect(page.get_by_text("downloaded note.txt")).to_be_visible()


def test_low_latency_redials_for_jpeg_and_keeps_drawing(
    desktop: BrowserContext, supervised: Supervised, asking: str
) -> None:
    page = desktop.new_page()
    links = routed(page)
    ready(page, supervised, f"{asking}/pulse", "jpeg")
    assert "formats" not in links[0].url
    page.get_by_label("low latency").check()
    wait_until(page, lambda: len(links) == 2)
    assert links[1].url.endswith("/socket?formats=webp%2Cjpeg"), links[1].url
    wait_until(page, lambda: {"kind": "browser_control", "take": True} in links[1].sent)
    expect(page.locator(".browserpane [data-role]")).to_have_attribute("data-role", "controller")
    assert page.locator(".notices .banner").all_inner_texts() == []  # nothing sent out of turn
    drawn = page.evaluate("() => window.forgeBrowser.drawn")
    page.locator("canvas.page").click()
    wait_for_colour(page, "red")
    poll(page, "(drawn) => window.forgeBrowser.drawn > drawn", drawn)
    assert set(links[0].formats) == {1}, links[0].formats  # WebP only, until asked
    wait_until(page, lambda: 2 in links[1].formats)  # motion as JPEG
    page.reload()  # the choice is kept
    expect(page.get_by_label("low latency")).to_be_checked()
