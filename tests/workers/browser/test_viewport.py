"""The page size a screencast frame is mapped with (issue 36 item 8: taps after swipes on a phone
were lost). Chromium's metadata sometimes gives an emulated phone's size in device pixels; read
as CSS pixels, the page drew taps three times too far, off the page."""

from __future__ import annotations

from forge.workers.browser.host import Viewport, frame_page_size

PHONE = Viewport(1170, 1857, 3.0)
"""A 390x619 CSS page at scale 3."""


def test_a_size_in_device_pixels_is_the_phones_own_layout() -> None:
    assert PHONE.laid_out((1170, 1857)) == (390, 619)


def test_a_size_in_css_pixels_and_an_older_layout_are_kept() -> None:
    assert PHONE.laid_out((390, 619)) == (390, 619)
    assert PHONE.laid_out((1280, 720)) == (1280, 720)  # a frame from before the resize landed
    assert Viewport(1280, 720, 1.0).laid_out((1280, 720)) == (1280, 720)


def test_a_frame_painted_before_a_resize_landed_keeps_the_old_layout() -> None:
    """The tab turns desktop while a phone-layout frame is still coming: it is the phone's."""
    desktop = Viewport(1280, 720, 1.0)
    assert frame_page_size((1170, 1857), desktop, PHONE) == (390, 619)
    assert frame_page_size((1280, 720), desktop, PHONE) == (1280, 720)
    assert frame_page_size((1170, 1857), PHONE, None) == (390, 619)
