"""The frame pump without a browser: WebP motion, JPEG passthrough, key frames after quiet."""

from __future__ import annotations

import asyncio
import io

from PIL import Image

from forge.testing.clock import ManualClock
from forge.wire.binary import FORMAT_JPEG, FORMAT_WEBP
from forge.workers.browser.pump import FramePump, PumpSettings

from .harness import Recorder


def picture(colour: tuple[int, int, int], kind: str, size: tuple[int, int] = (64, 48)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, kind, **({"lossless": True} if kind == "WEBP" else {}))
    return out.getvalue()


async def settle(clock: ManualClock, sleepers: int) -> None:
    """Let the pump's tasks run until `sleepers` of them are parked on the clock."""
    while clock.sleepers < sleepers:  # noqa: ASYNC110 - ManualClock's way to see "parked"
        await asyncio.sleep(0)


async def test_paints_become_webp_and_jpeg_frames_then_a_key_frame_after_quiet() -> None:
    clock = ManualClock()
    recorder = Recorder()
    captures: list[int] = []

    async def capture() -> bytes:
        captures.append(1)
        return picture((0, 0, 255), "WEBP", (128, 96))

    pump = FramePump(
        profile_id=4, tab=2, clock=clock, sink=recorder.frame, capture_key=capture,
        settings=PumpSettings(max_motion_fps=10, quiet_s=0.3),
    )  # fmt: skip
    pump.page_size = (64, 48)
    pump.wants_jpeg = True
    pump.start()
    jpeg = picture((255, 0, 0), "JPEG")
    pump.paint(jpeg, (64, 48))
    (passthrough,) = recorder.frames
    assert (passthrough.image_format, passthrough.image, passthrough.seq) == (FORMAT_JPEG, jpeg, 1)
    webp = await recorder.until(
        lambda: next((f for f in recorder.frames if f.image_format == FORMAT_WEBP), None)
    )
    assert (webp.width, webp.height, webp.key, webp.seq) == (64, 48, False, 2)
    assert webp.decoded_size() == (64, 48)
    assert webp.pixel(10, 10)[0] > 240
    assert captures == []

    await settle(clock, 2)  # the motion cap and the quiet wait are both parked
    clock.advance(0.3)
    key = await recorder.until(lambda: next((f for f in recorder.frames if f.key), None))
    assert (key.width, key.height, key.page_width, key.page_height) == (128, 96, 64, 48)
    assert (key.profile, key.tab, key.seq) == (4, 2, 3)
    assert captures == [1]
    await pump.stop()


async def test_an_asked_key_frame_comes_at_once_and_webp_motion_is_capped() -> None:
    clock = ManualClock()
    recorder = Recorder()

    async def capture() -> bytes:
        return picture((0, 255, 0), "WEBP")

    pump = FramePump(
        profile_id=1, tab=1, clock=clock, sink=recorder.frame, capture_key=capture,
        settings=PumpSettings(max_motion_fps=10, quiet_s=0.3),
    )  # fmt: skip
    pump.start()
    pump.ask_key_frame()
    await recorder.until(lambda: recorder.frames)
    assert recorder.frames[0].key

    for shade in range(5):
        pump.paint(picture((shade * 40, 0, 0), "JPEG"), (64, 48))
    await recorder.until(lambda: len(recorder.frames) == 2)
    await settle(clock, 1)
    pump.paint(picture((250, 0, 0), "JPEG"), (64, 48))
    pump.paint(picture((0, 0, 250), "JPEG"), (64, 48))
    await asyncio.sleep(0)
    assert len(recorder.frames) == 2  # capped: nothing encodes until the interval passes
    clock.advance(0.1)
    newest = await recorder.until(lambda: recorder.frames[2:] and recorder.frames[2])
    assert newest.pixel(5, 5)[2] > 200  # the newest paint, the one before was skipped
    await pump.stop()


async def test_chromium_sending_the_same_picture_again_is_not_movement() -> None:
    """Each capture makes Chromium re-send its last screencast frame, byte for byte: that must not
    restart the quiet clock (a still page would be captured every ~320 ms) nor replace the crisp
    key frame with a lossy copy."""
    clock = ManualClock()
    recorder = Recorder()
    captures: list[int] = []

    async def capture() -> bytes:
        captures.append(1)
        return picture((0, 0, 255), "WEBP")

    pump = FramePump(
        profile_id=1, tab=1, clock=clock, sink=recorder.frame, capture_key=capture,
        settings=PumpSettings(max_motion_fps=10, quiet_s=0.3),
    )  # fmt: skip
    pump.wants_jpeg = True
    pump.start()
    still = picture((255, 0, 0), "JPEG")
    pump.paint(still, (64, 48))
    await recorder.until(lambda: any(f.image_format == FORMAT_WEBP for f in recorder.frames))
    await settle(clock, 2)
    clock.advance(0.3)
    await recorder.until(lambda: recorder.frames[-1].key)
    sent = len(recorder.frames)

    pump.paint(still, (64, 48))  # what Chromium sends after the capture
    assert len(recorder.frames) == sent  # no JPEG passthrough of the copy either
    for _ in range(10):
        await asyncio.sleep(0)  # give the key frame task its chance to start a quiet wait
    assert clock.sleepers == 0  # it did not: it still waits for a paint
    clock.advance(1.0)
    assert (len(recorder.frames), captures) == (sent, [1])

    pump.paint(picture((0, 250, 0), "JPEG"), (64, 48))  # the page really moved
    assert recorder.frames[-1].image_format == FORMAT_JPEG
    await settle(clock, 2)
    clock.advance(0.3)
    await recorder.until(lambda: len(captures) == 2)
    await pump.stop()
