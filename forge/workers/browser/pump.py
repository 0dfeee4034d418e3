"""One viewed tab's frames: Chromium's screencast in, ready-made kind-1 frames out, each once.

Motion arrives as Chromium's JPEG screencast frames. For viewers that read WebP (everyone, D3)
the newest waiting frame is re-encoded to lossy WebP in a thread (Pillow releases the GIL), at
most `max_motion_fps` a second: frames that paint while an encode runs are skipped, never queued.
For viewers that declared JPEG the frame is packed untouched as format 2, the cheap path.
A lossless WebP key frame (`Page.captureScreenshot`, full device resolution) is taken when asked
(attach, resize) and once the page has been quiet for `quiet_s` after moving, so a still page
ends crisp; the copy of the last frame Chromium sends after each capture is not movement.
Motion waits behind an asked key frame only while its capture can still come: a capture that
fails or is overtaken by a navigation lets the newest held paint through (the new page), one
that outlives `capture_s` lets the next paints through; either is tried again once the page
settles, and every `retry_s` while the viewer that asked has not had its key frame (a still
page never settles again).
Every frame is packed once; the supervisor hands the same bytes to every viewer.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from PIL import Image

from forge.clock import Clock
from forge.logs import get_logger
from forge.wire.binary import FORMAT_JPEG, FORMAT_WEBP, browser_frame

log = get_logger(__name__)

KEY_FRAME_TRIES = 5
"""Captures tried in a row (a quiet period apart) before the pump waits for the next quiet, or
for `PumpSettings.retry_s` while a viewer is still owed its key frame."""

SEQ_MODULUS = 2**32
"""O-B3: per-tab frame seqs start at 1 and wrap modulo 2^32."""


@dataclass(frozen=True)
class PumpSettings:
    webp_quality: int = 70
    """Lossy WebP quality for motion frames; Pillow's method 0 keeps an encode near 15 ms."""
    max_motion_fps: float = 30.0
    """The WebP motion cap: above it an encode costs a core and no viewer sees the difference."""
    quiet_s: float = 0.3
    """How long a page must stop painting before the crisp key frame is taken."""
    capture_s: float = 10.0
    """A key frame capture's bound, should Chromium never answer one for another reason than
    a navigation (which `navigated` reports at once); a capture on a loaded machine may take
    seconds."""
    retry_s: float = 5.0
    """How often a key frame a viewer was promised (attach, resize) is tried again once
    `KEY_FRAME_TRIES` captures in a row failed: a still page paints nothing that would start
    the next try, and its viewer would never get a crisp frame."""


class CaptureLost(Exception):
    """A key frame capture a navigation overtook. Chromium never answers a capture sent while a
    navigation commits (the old document takes the reply with it); waited for, it held motion
    back for good (a phone that navigated the tab it had just attached saw no frame again)."""


class CaptureTimeout(Exception):
    """A key frame capture not answered within `capture_s`, for no reason known."""


def image_size(data: bytes) -> tuple[int, int]:
    """Width and height from an image's header (Pillow reads the header only, not the pixels)."""
    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
    return width, height


def laid_out_at(width: int, height: int, page_size: tuple[int, int]) -> bool:
    """Whether a `width` x `height` picture can show a page laid out at `page_size` CSS pixels:
    the same shape, within 5 %. Right after a resize Chromium may send a paint of the old layout
    with the new size's metadata, and a capture may end just before the new size lands; a
    viewer would draw either at the wrong shape and map its taps to the wrong places."""
    page_width, page_height = page_size
    if not (width and height and page_width and page_height):
        return True  # nothing to compare against yet
    return abs(width * page_height - height * page_width) <= 0.05 * height * page_width


def webp_from_jpeg(jpeg: bytes, quality: int) -> tuple[bytes, int, int]:
    """Decode a screencast JPEG and encode it as lossy WebP with Pillow's fastest method."""
    with Image.open(io.BytesIO(jpeg)) as image:
        out = io.BytesIO()
        image.save(out, "WEBP", quality=quality, method=0)
        width, height = image.size
    return out.getvalue(), width, height


class FrameSeq:
    """One tab's frame numbers (O-B3): from 1, monotonic, wrapping modulo 2^32.

    The tab owns it, not the pump: a tab's pump stops when its last viewer leaves and a new one
    starts on the next attach, and the supervisor first sends that viewer the frame it kept from
    the old pump, so numbering again from 1 would run backwards (issue #13 item 4)."""

    def __init__(self) -> None:
        self.last = 0

    def next(self) -> int:
        self.last = self.last % (SEQ_MODULUS - 1) + 1
        return self.last


FrameSink = Callable[[bytes], None]
Capture = Callable[[], Awaitable[bytes]]


class FramePump:
    """Turns one tab's paints into kind-1 frames for whichever formats its viewers read."""

    def __init__(
        self,
        *,
        profile_id: int,
        tab: int,
        clock: Clock,
        sink: FrameSink,
        capture_key: Capture,
        settings: PumpSettings,
        seq: FrameSeq | None = None,
    ) -> None:
        self.profile_id = profile_id
        self.tab = tab
        self.wants_webp = True
        self.wants_jpeg = False
        self.page_size = (0, 0)
        """The page viewport in CSS pixels, as gestures address it (the header's page size)."""
        self._clock = clock
        self._sink = sink
        self._capture_key = capture_key
        self._settings = settings
        self._seq = seq if seq is not None else FrameSeq()
        self._motion: tuple[bytes, tuple[int, int]] | None = None
        self._motion_ready = asyncio.Event()
        self._key_asked = asyncio.Event()
        self._painted = asyncio.Event()
        self._last_paint = clock.monotonic()
        self._last_jpeg = b""
        self._tasks: list[asyncio.Task[None]] = []
        self._holding = False
        """A key frame is asked for and not sent yet: motion frames wait behind it."""
        self._owed = False
        """A key frame is asked for and none was sent since, held motion or not."""
        self._held: tuple[bytes, tuple[int, int]] | None = None
        """The newest paint while holding: sent if the key frame does not come."""
        self._navigated = asyncio.Event()

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._encode_motion(), name=f"browser-webp-{self.tab}"),
            asyncio.create_task(self._key_frames(), name=f"browser-key-{self.tab}"),
        ]
        for task in self._tasks:
            task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        """A pump task that fails leaves its tab frozen for every viewer: say so in the log."""
        if not task.cancelled() and (error := task.exception()) is not None:
            log.error(
                "browser_pump_failed", tab=self.tab, task=task.get_name(), error=repr(error),
            )  # fmt: skip

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    def ask_key_frame(self) -> None:
        """Attach and resize: the next frame a viewer gets is a crisp one, so motion waits."""
        self._holding = self._owed = True
        self._key_asked.set()

    def navigated(self) -> None:
        """The main frame committed a new document: a capture in flight is never answered."""
        self._navigated.set()

    def paint(self, jpeg: bytes, page_size: tuple[int, int]) -> None:
        """One screencast frame from Chromium (already acknowledged), laid out at `page_size`
        CSS pixels: a frame painted before a resize keeps the size it was painted at, and one
        whose picture has another shape than its metadata says (`laid_out_at`) is dropped.

        A frame byte for byte the last one is not a paint: each key frame capture makes Chromium
        send the picture again, which would restart the quiet clock (a still page captured every
        ~320 ms, forever) and cover the crisp key frame with a lossy copy."""
        if jpeg == self._last_jpeg:
            return
        if not laid_out_at(*(size := image_size(jpeg)), page_size):
            log.debug("browser_paint_misshapen", tab=self.tab, image=size, page=page_size)
            return
        self._last_jpeg = jpeg
        self._last_paint = self._clock.monotonic()
        self._painted.set()
        if self._holding:
            self._held = (jpeg, page_size)
            return
        self._forward(jpeg, page_size)

    def _forward(self, jpeg: bytes, page_size: tuple[int, int]) -> None:
        """A paint as motion: JPEG passed through at once, WebP for the encoder to take."""
        if self.wants_jpeg:
            width, height = image_size(jpeg)
            self._emit(FORMAT_JPEG, False, jpeg, width, height, page_size)
        if self.wants_webp:
            self._motion = (jpeg, page_size)
            self._motion_ready.set()

    def _emit(
        self,
        image_format: int,
        key: bool,
        image: bytes,
        width: int,
        height: int,
        page_size: tuple[int, int],
    ) -> None:
        page_width, page_height = page_size
        frame = browser_frame(
            profile=self.profile_id, tab=self.tab, seq=self._seq.next(), width=width, height=height,
            image_format=image_format, key=key, page_width=page_width, page_height=page_height,
            image=image,
        )  # fmt: skip
        self._sink(frame)

    async def _encode_motion(self) -> None:
        interval = 1.0 / self._settings.max_motion_fps
        while True:
            await self._motion_ready.wait()
            self._motion_ready.clear()
            motion, self._motion = self._motion, None
            if motion is None or not self.wants_webp:
                continue
            jpeg, page_size = motion
            started = self._clock.monotonic()
            webp, width, height = await asyncio.to_thread(
                webp_from_jpeg, jpeg, self._settings.webp_quality
            )
            if not self._holding:
                self._emit(FORMAT_WEBP, False, webp, width, height, page_size)
            rest = interval - (self._clock.monotonic() - started)
            if rest > 0:
                await self._clock.sleep(rest)

    async def _key_frames(self) -> None:
        failures = 0
        while True:
            if not self._key_asked.is_set():
                await self._until_quiet_or_asked(self._settings.retry_s if self._owed else None)
            self._key_asked.clear()
            self._painted.clear()
            try:
                image = await self._capture_within_bound()
                width, height = image_size(image)  # Chromium may answer with no picture
            except Exception as error:
                # Mid-navigation Chromium refuses a capture or never answers it: motion goes on
                # meanwhile, and the capture is tried again once the page settles.
                failures += 1
                self._release(flush=not isinstance(error, CaptureTimeout))
                lost = isinstance(error, CaptureLost)  # a navigation: routine, not a fault
                (log.info if lost else log.warning)(
                    "browser_key_frame_failed",
                    tab=self.tab,
                    error=str(error),
                    kind=type(error).__name__,
                )
                if failures < KEY_FRAME_TRIES:
                    await self._clock.sleep(self._settings.quiet_s)
                    self._key_asked.set()
                continue
            if not laid_out_at(width, height, self.page_size):  # taken before a resize landed
                log.debug(
                    "browser_key_frame_misshapen", tab=self.tab, image=(width, height),
                    page=self.page_size,
                )  # fmt: skip
                failures += 1
                if failures < KEY_FRAME_TRIES:
                    self._key_asked.set()
                else:
                    self._release(flush=False)
                continue
            failures = 0
            self._emit(FORMAT_WEBP, True, image, width, height, self.page_size)
            self._owed = False
            self._holding, self._held = False, None  # the capture shows what was held, or newer

    def _release(self, *, flush: bool) -> None:
        """No key frame is coming: motion flows again, from the newest paint held back when it
        is known to be the page's latest (not after a timeout, when a paint laid out before
        a resize may carry the new size's metadata)."""
        self._holding = False
        held, self._held = self._held, None
        if flush and held is not None:
            self._forward(*held)

    async def _capture_within_bound(self) -> bytes:
        """The capture, or `CaptureLost` once a navigation overtook it, or `CaptureTimeout`
        (the capture is cancelled, which also frees the tab's emulation lock it holds)."""
        self._navigated.clear()
        capture = asyncio.ensure_future(self._capture_key())
        bound = asyncio.ensure_future(self._clock.sleep(self._settings.capture_s))
        navigated = asyncio.ensure_future(self._navigated.wait())
        try:
            await asyncio.wait({capture, bound, navigated}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            bound.cancel()
            navigated.cancel()
            answered = capture.done()
            if not answered:
                capture.cancel()
        if answered:
            return capture.result()
        if self._navigated.is_set():
            raise CaptureLost("the page navigated during the capture")
        raise CaptureTimeout(f"no capture within {self._settings.capture_s} s")

    async def _until_quiet_or_asked(self, retry_s: float | None) -> None:
        """Return when a key frame is asked for, when the page painted and then went quiet, or,
        given `retry_s`, once that long passed with no paint (a still page)."""
        asked = asyncio.ensure_future(self._key_asked.wait())
        painted = asyncio.ensure_future(self._painted.wait())
        waiters: list[asyncio.Future[Any]] = [asked, painted]
        if retry_s is not None:
            waiters.append(asyncio.ensure_future(self._clock.sleep(retry_s)))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            if not painted.done():
                return  # asked, or the promised key frame is due another try
            while not asked.done():
                quiet_at = self._last_paint + self._settings.quiet_s
                if self._clock.monotonic() >= quiet_at:
                    return
                quiet = asyncio.ensure_future(self._clock.sleep(quiet_at - self._clock.monotonic()))
                waiters.append(quiet)
                await asyncio.wait({asked, quiet}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
