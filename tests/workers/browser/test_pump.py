"""The frame pump without a browser: WebP motion, JPEG passthrough, key frames after quiet."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable

from PIL import Image

from forge.testing.clock import ManualClock
from forge.wire.binary import FORMAT_JPEG, FORMAT_WEBP
from forge.workers.browser.pump import KEY_FRAME_TRIES, FramePump, PumpSettings

from .harness import Recorder


def picture(colour: tuple[int, int, int], kind: str, size: tuple[int, int] = (64, 48)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, kind, **({"lossless": True} if kind == "WEBP" else {}))
    return out.getvalue()


async def settle(clock: ManualClock, sleepers: int) -> None:
    """Let the pump's tasks run until `sleepers` of them are parked on the clock."""
    while clock.sleepers < sleepers:  # noqa: ASYNC110 - ManualClock's way to see "parked"
        await asyncio.sleep(0)


async def turns(done: Callable[[], bool]) -> None:
    """Let the pump's tasks run until `done()` (a bounded number of loop turns)."""
    for _ in range(1000):
        if done():
            return
        await asyncio.sleep(0)
    raise AssertionError("still not done after 1000 turns of the loop")


async def run_until(
    clock: ManualClock, done: Callable[[], bool], *, most_s: float, fail: bool = True
) -> float:
    """Let the clock run a tenth of a second at a time, the pump's tasks moving between steps,
    until `done()`; the time that took (at most `most_s`, else an AssertionError if `fail`)."""
    spent = 0.0
    while True:
        for _ in range(50):  # turns of the loop, not time: the tasks reach their next wait
            if done():
                return spent
            await asyncio.sleep(0)
        if spent >= most_s:
            assert not fail, f"not done after {most_s} s of the clock"
            return spent
        clock.advance(0.1)
        spent += 0.1


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


async def test_a_capture_never_answered_lets_the_held_paint_through_and_is_tried_again() -> None:
    """Chromium never answers a capture sent while a navigation commits: once the navigation is
    reported the paint held behind the asked key frame is sent, motion flows, and the key frame
    comes after the page settles. A capture unanswered for no known reason is given up on at
    its bound, letting the next paints through."""
    clock = ManualClock()
    recorder = Recorder()
    captures: list[int] = []
    never: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
    lost_again: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    async def capture() -> bytes:
        captures.append(1)
        if len(captures) == 1:
            return await never
        if len(captures) == 2:
            return await lost_again
        return picture((0, 0, 255), "WEBP")

    pump = FramePump(
        profile_id=1, tab=1, clock=clock, sink=recorder.frame, capture_key=capture,
        settings=PumpSettings(max_motion_fps=10, quiet_s=0.3, capture_s=5.0),
    )  # fmt: skip
    pump.wants_jpeg, pump.wants_webp = True, False  # motion as it comes, no encoder between
    pump.start()
    pump.ask_key_frame()
    await settle(clock, 1)  # the capture runs, bounded by the clock
    red = picture((255, 0, 0), "JPEG")
    pump.paint(red, (64, 48))
    assert (captures, recorder.frames) == ([1], [])  # held behind the asked key frame

    pump.navigated()
    await turns(never.cancelled)  # given up on; the retry waits for the page to settle
    assert [(f.image_format, f.image) for f in recorder.frames] == [(FORMAT_JPEG, red)]
    pump.paint(picture((0, 255, 0), "JPEG"), (64, 48))
    assert recorder.frames[-1].image_format == FORMAT_JPEG  # motion flows

    clock.advance(0.3)
    await settle(clock, 1)  # the second capture, bounded
    pump.ask_key_frame()
    pump.paint(picture((0, 0, 250), "JPEG"), (64, 48))
    clock.advance(5.0)  # never answered either, and no navigation says so: the bound does
    await turns(lost_again.cancelled)
    assert recorder.frames[-1].pixel(5, 5)[1] > 200  # the held paint is not sent after a bound
    pump.paint(picture((250, 250, 0), "JPEG"), (64, 48))
    assert recorder.frames[-1].pixel(5, 5)[0] > 200  # the next one is
    await settle(clock, 1)
    clock.advance(0.3)
    key = await recorder.until(lambda: next((f for f in recorder.frames if f.key), None))
    assert key.pixel(5, 5)[2] > 200
    assert captures == [1, 1, 1]
    await pump.stop()


async def test_a_capture_answered_with_no_picture_is_tried_again() -> None:
    """Chromium answered a capture overtaken by a navigation with data that is no picture; the
    pump's key-frame task died of it, and the viewer who had just attached never saw a frame."""
    clock = ManualClock()
    recorder = Recorder()
    answers = [b"", picture((0, 0, 255), "WEBP")]

    async def capture() -> bytes:
        return answers.pop(0)

    pump = FramePump(
        profile_id=1, tab=1, clock=clock, sink=recorder.frame, capture_key=capture,
        settings=PumpSettings(quiet_s=0.3),
    )  # fmt: skip
    pump.start()
    pump.ask_key_frame()
    await turns(lambda: len(answers) == 1)  # the first answer taken (and refused)
    for _ in range(10):  # the retry waits a quiet period: let the clock run, a tenth at a time
        if answers:
            await asyncio.sleep(0)  # a turn of the loop, not time: the pump's tasks move on
            clock.advance(0.1)
    key = await recorder.until(lambda: next((f for f in recorder.frames if f.key), None))
    assert (key.width, key.height) == (64, 48)
    assert key.pixel(5, 5)[2] > 200
    assert answers == []
    await pump.stop()


async def test_a_paint_or_capture_of_the_old_layout_under_the_new_size_is_not_sent() -> None:
    """Right after a resize to a phone's 390x844, Chromium may send a paint of the old 1280x720
    layout labelled with the new size, and a key capture may end just before the size lands:
    neither goes out; the capture is taken again."""
    clock = ManualClock()
    recorder = Recorder()
    shots = [picture((0, 0, 255), "WEBP", (128, 72)), picture((0, 255, 0), "WEBP", (78, 169))]

    async def capture() -> bytes:
        return shots.pop(0)

    pump = FramePump(
        profile_id=1, tab=1, clock=clock, sink=recorder.frame, capture_key=capture,
        settings=PumpSettings(max_motion_fps=10, quiet_s=0.3),
    )  # fmt: skip
    pump.wants_jpeg = True
    pump.page_size = (390, 844)
    pump.start()
    pump.ask_key_frame()
    key = await recorder.until(lambda: next((f for f in recorder.frames if f.key), None))
    assert (key.width, key.height, key.page_width) == (78, 169, 390)
    assert shots == []
    pump.paint(picture((255, 0, 0), "JPEG", (128, 72)), (390, 844))
    pump.paint(picture((250, 0, 0), "JPEG", (78, 169)), (390, 844))
    await recorder.until(lambda: len(recorder.frames) >= 2)
    await asyncio.sleep(0)
    sizes = {(f.width, f.height) for f in recorder.frames}
    assert sizes == {(78, 169)}
    await pump.stop()


async def test_a_still_page_whose_captures_keep_failing_is_captured_again_until_one_lands() -> None:
    """A viewer attached to a page that paints nothing more: once `KEY_FRAME_TRIES` captures in
    a row failed, no paint would ever start the next try and the viewer never got a key frame.
    The promised key frame is tried again every `retry_s` until one lands, then no more."""
    clock = ManualClock()
    recorder = Recorder()
    failing = KEY_FRAME_TRIES + 2
    captures: list[int] = []

    async def capture() -> bytes:
        captures.append(1)
        if len(captures) <= failing:
            raise RuntimeError("Unable to capture screenshot")
        return picture((0, 0, 255), "WEBP")

    pump = FramePump(
        profile_id=1, tab=1, clock=clock, sink=recorder.frame, capture_key=capture,
        settings=PumpSettings(quiet_s=0.3, retry_s=5.0),
    )  # fmt: skip
    pump.start()
    pump.ask_key_frame()
    await run_until(clock, lambda: len(captures) == KEY_FRAME_TRIES, most_s=2.0)  # a quiet apart
    waited = await run_until(clock, lambda: len(captures) == KEY_FRAME_TRIES + 1, most_s=6.0)
    assert 4.9 <= waited <= 5.1  # no paint comes: the retry's time does
    await run_until(clock, lambda: any(f.key for f in recorder.frames), most_s=11.0)
    (key,) = [f for f in recorder.frames if f.key]
    assert key.pixel(5, 5)[2] > 200
    assert len(captures) == failing + 1
    await run_until(clock, lambda: False, most_s=60.0, fail=False)  # delivered: no more tries
    assert len(captures) == failing + 1
    await pump.stop()
