"""A profile's sound: its sink's monitor read while anyone listens, sent as kind-2 frames.

Chromium plays into the profile's PulseAudio null sink (`PULSE_SERVER`/`PULSE_SINK` at launch);
`MonitorReader` reads the sink's monitor with `pasimple` (libpulse's simple API) in a thread, 20 ms
at a time. The thread releases the GIL in every read and gates silence itself, so a quiet
profile wakes the event loop not at all; a loud frame is handed to the loop, which numbers it per
tab and sends it to the tabs `sound.route` picks. Nothing is read while no tab is listened to.

When the daemon dies, the read fails: the host says so (`on_trouble`) and reads nothing until
the supervisor reports the sound server back (`reconnect`). Chromium does not reconnect to a
restarted PulseAudio by itself (its audio service keeps the dead connection, and every new stream
fails), so `reconnect` ends Chromium's audio service process; Chromium starts a fresh one for the
page's next sound. `reconnect` returns (and the sound is said back) only once Chromium has reaped
the ended process: before that Chromium may still hand a new stream to the dead service, and that
stream stays silent for good. A stream that was playing across the restart stays silent until the
page plays again: Chromium does not reopen it (measured with Chromium 156).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

import pasimple
import psutil

from forge.logs import get_logger
from forge.wire.binary import browser_audio
from forge.workers.audio.protocol import CHANNELS, RATE
from forge.workers.browser.protocol import AudioRoute
from forge.workers.browser.pump import FrameSeq, FrameSink
from forge.workers.browser.sound import FRAME_BYTES, Audibility, SilenceGate, route

log = get_logger(__name__)

AUDIO_SERVICE_FLAG = "--utility-sub-type=audio.mojom.AudioService"
"""How Chromium's audio service process is told apart from its other children."""

AUDIO_SERVICE_REAPED_S = 5.0
"""How long `reconnect` waits for Chromium to reap the audio service it ended (it takes
milliseconds); past it the sound is said back anyway, and the log says it was not reaped."""

Trouble = Callable[[str | None], None]
T = TypeVar("T")


class MonitorReader:
    """One thread reading a sink's monitor; loud frames go to `on_frame` on the loop."""

    def __init__(
        self,
        route: AudioRoute,
        on_frame: Callable[[bytes], None],
        on_lost: Callable[[str], None],
    ) -> None:
        self._route = route
        self._on_frame = on_frame
        self._on_lost = on_lost
        self._loop = asyncio.get_running_loop()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"monitor-{route.sink}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """The thread ends after the read in progress (at most one frame, 20 ms)."""
        self._stopping.set()

    def _run(self) -> None:
        try:
            stream = pasimple.PaSimple(
                pasimple.PA_STREAM_RECORD,
                pasimple.PA_SAMPLE_S16LE,
                CHANNELS,
                RATE,
                app_name="forge",
                stream_name=f"{self._route.sink} listener",
                server_name=self._route.server,
                device_name=f"{self._route.sink}.monitor",
                fragsize=FRAME_BYTES,
            )
        except pasimple.PaSimpleError as error:
            self._hand(self._on_lost, f"the sound server did not open {self._route.sink}: {error}")
            return
        gate = SilenceGate()
        try:
            while not self._stopping.is_set():
                samples = stream.read(FRAME_BYTES)
                if gate.passes(samples) and not self._stopping.is_set():
                    self._hand(self._on_frame, samples)
        except pasimple.PaSimpleError as error:
            if not self._stopping.is_set():
                self._hand(self._on_lost, f"the sound server stopped ({error})")
        finally:
            stream.close()

    def _hand(self, callback: Callable[[T], None], value: T) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed under a stopping host
            self._loop.call_soon_threadsafe(callback, value)


class ProfileSound:
    """The host's side of a profile's sound: who listens, who plays, the reader, the frames."""

    def __init__(
        self,
        route: AudioRoute,
        profile_id: int,
        on_frame: FrameSink,
        on_trouble: Trouble,
        chromium_pid: Callable[[], int | None],
    ) -> None:
        self.route = route
        self._profile_id = profile_id
        self._on_frame = on_frame
        self._on_trouble = on_trouble
        self._chromium_pid = chromium_pid
        self.audibility = Audibility()
        self.listened: set[int] = set()
        self._seqs: dict[int, FrameSeq] = {}
        self._reader: MonitorReader | None = None
        self._lost: str | None = None

    def listen(self, tab: int, on: bool) -> None:
        """Whether any viewer of `tab` hears it; the monitor is read while any tab is."""
        if on:
            self.listened.add(tab)
        else:
            self.listened.discard(tab)
        self._fit_reader()

    def tab_gone(self, tab: int) -> None:
        self.listened.discard(tab)
        self.audibility.forget(tab)
        self._seqs.pop(tab, None)
        self._fit_reader()

    async def reconnect(self) -> None:
        """The sound server is (back) up with this profile's sink: Chromium's audio service
        starts afresh against it, and the monitor is read again if anyone listens."""
        ended, left = await asyncio.to_thread(
            restart_audio_service, self._chromium_pid(), AUDIO_SERVICE_REAPED_S
        )
        log.info(
            "browser_sound_reconnected",
            sink=self.route.sink,
            audio_service_ended=ended,
            audio_service_reaped=not left,
        )
        if self._reader is not None:
            self._reader.stop()
            self._reader = None
        if self._lost is not None:
            self._lost = None
            self._on_trouble(None)
        self._fit_reader()

    def stop(self) -> None:
        if self._reader is not None:
            self._reader.stop()
            self._reader = None

    def _fit_reader(self) -> None:
        if self.listened and self._reader is None and self._lost is None:
            reader = MonitorReader(
                self.route,
                lambda samples: self._frame(reader, samples),
                lambda why: self._reader_lost(reader, why),
            )
            self._reader = reader
            reader.start()
        elif not self.listened and self._reader is not None:
            self.stop()

    def _reader_lost(self, reader: MonitorReader, why: str) -> None:
        if reader is not self._reader:
            return
        log.warning("browser_sound_lost", sink=self.route.sink, why=why)
        self._reader = None
        if self._lost is None:
            self._lost = why
            self._on_trouble(why)

    def _frame(self, reader: MonitorReader, samples: bytes) -> None:
        if reader is not self._reader:
            return  # a stopped reader's last frame
        for tab in route(self.audibility.playing, self.listened):
            seq = self._seqs.setdefault(tab, FrameSeq()).next()
            frame = browser_audio(
                profile=self._profile_id, tab=tab, seq=seq, rate=RATE, channels=CHANNELS,
                samples=samples,
            )  # fmt: skip
            self._on_frame(frame)


def restart_audio_service(chromium_pid: int | None, within: float) -> tuple[bool, bool]:
    """End Chromium's audio service process, if it runs, and wait up to `within` seconds for
    Chromium to reap it (then Chromium has seen it die, and starts another on demand). Whether
    one was ended, and whether one ended is still not reaped."""
    if chromium_pid is None:
        return False, False
    ended: list[psutil.Process] = []
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(chromium_pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if AUDIO_SERVICE_FLAG in child.cmdline():
                    child.kill()
                    ended.append(child)
    _, left = psutil.wait_procs(ended, timeout=within)
    return bool(ended), bool(left)
