"""A tab's sound over a real socket: real Chromium, a real PulseAudio daemon, WebAudio tones."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import psutil
import pytest
import pytest_asyncio

from forge.supervisor.browser.service import BrowserService
from forge.supervisor.socket.outbound import AUDIO_LIMIT
from forge.testing.raw_client import RawClient
from forge.workers.audio import protocol as audio_protocol
from forge.workers.audio.protocol import SoundMissing, find_binaries
from forge.workers.browser.sound import FRAME_BYTES, SILENT_PEAK

from .harness import AudioFrame
from .socket_harness import SEAT, Client, client, serving

try:
    find_binaries()
except SoundMissing as missing:
    pytest.skip(str(missing), allow_module_level=True)

pytestmark = pytest.mark.asyncio(loop_scope="module")

OTHER = {"org": "acme", "project": "other", "label": "lead"}
"""A seat whose project uses the browser profile `second`: another host, another sink."""
SECOND_SECONDS = 50
"""Frames in one second of sound (20 ms each)."""

Served = tuple[str, Path, BrowserService]
_input_seq = itertools.count(1)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def audio_served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Served]:
    """A supervisor with two projects on two browser profiles, sound on (the default)."""
    root = tmp_path_factory.mktemp("audio")
    other = f'[[projects]]\norg = "acme"\nname = "other"\npath = "{root / "proj"}"\n'
    services: list[BrowserService] = []
    async with serving(root, other + 'browser_profile = "second"\n', services=services) as served:
        yield served[0], served[1], services[0]


def connect(served: Served) -> Any:
    return client((served[0], served[1]))


def left(frames: list[AudioFrame]) -> np.ndarray[Any, Any]:
    samples = np.frombuffer(b"".join(f.samples for f in frames), "<i2").reshape(-1, 2)
    return samples[:, 0].astype(float)


def clean_runs(samples: np.ndarray[Any, Any], shortest: int = 960) -> list[np.ndarray[Any, Any]]:
    """The stretches of at least `shortest` samples (20 ms) between dropouts (32 or more silent
    samples in a row). Under load Chromium's renderer misses deadlines and the sink plays silence
    in the gaps (at load 25 on 2 cores, one every ~100 ms); between them the tone is whole."""
    silent = np.concatenate(([False], np.abs(samples) < SILENT_PEAK, [False])).astype(int)
    starts = np.flatnonzero(np.diff(silent) == 1)
    ends = np.flatnonzero(np.diff(silent) == -1)
    gaps = [(start, end) for start, end in zip(starts, ends, strict=True) if end - start >= 32]
    bounds = [0, *(edge for gap in gaps for edge in gap), len(samples)]
    runs = [samples[bounds[i] : bounds[i + 1]] for i in range(0, len(bounds), 2)]
    return [run for run in runs if len(run) >= shortest]


def periods(frames: list[AudioFrame]) -> np.ndarray[Any, Any]:
    """The tone's periods in samples: the spans between rising zero crossings (placed between
    samples by linear interpolation) inside stretches of 5 ms or more without a dropout."""
    spans = []
    for run in clean_runs(left(frames), shortest=240):
        rising = np.flatnonzero((run[:-1] < 0) & (run[1:] >= 0))
        exact = rising + run[rising] / (run[rising] - run[rising + 1])
        spans.append(np.diff(exact))
    return np.concatenate(spans) if spans else np.zeros(0)


CYCLES = 40
"""Whole periods of clean sound a tone's pitch is taken from (about 90 ms at 440 Hz)."""


def tone(frames: list[AudioFrame]) -> tuple[float, int]:
    """The tone's frequency and its peak sample. The median period, so that a glitch the renderer
    leaves under load (a short dropout or a jump in phase adds or cuts one period) moves nothing."""
    spans = periods(frames)
    assert len(spans) >= CYCLES, f"only {len(spans)} clean periods"
    return 48000 / float(np.median(spans)), int(np.abs(left(frames)).max())


def amplitude(run: np.ndarray[Any, Any], hz: float) -> float:
    """The amplitude of the `hz` sine in `run` (a Hann-windowed single-bin DFT)."""
    window = np.hanning(len(run))
    phase = np.exp(-2j * np.pi * hz * np.arange(len(run)) / 48000)
    return float(2 * abs(np.sum(run * window * phase)) / window.sum())


def steady_runs(frames: list[AudioFrame], hz: float) -> list[np.ndarray[Any, Any]]:
    """The clean stretches cut again wherever the tone's phase jumps (a period more than 5 % off
    `hz`'s: the renderer missed a deadline without a dropout), each at least 20 ms long. A jump
    inside a stretch spreads energy over every frequency (a 30-sample jump puts ~0.9 % of the
    tone at twice its pitch), which is not another tone."""
    expected = 48000 / hz
    steady = []
    for run in clean_runs(left(frames)):
        rising = np.flatnonzero((run[:-1] < 0) & (run[1:] >= 0))
        jumps = np.flatnonzero(np.abs(np.diff(rising) - expected) > 0.05 * expected)
        cuts = [0, *(edge for jump in jumps for edge in (rising[jump], rising[jump + 1])), len(run)]
        pieces = [run[cuts[i] : cuts[i + 1]] for i in range(0, len(cuts), 2)]
        steady += [piece for piece in pieces if len(piece) >= 960]
    return steady


def never_mixed(frames: list[AudioFrame], own: float, other: float) -> bool:
    """In every steady stretch the other tone is under 1 % of this one (-40 dB)."""
    runs = steady_runs(frames, own)
    return bool(runs) and all(amplitude(r, other) < 0.01 * amplitude(r, own) for r in runs)


async def view_tone(a: Client, site: str, seat: dict[str, str], query: str) -> int:
    """Open the tone page in a new tab of `seat`'s browser and view it; its number."""
    opened = await a.ask({"kind": "browser_open", "seat": seat, "url": f"{site}/tone#{query}"})
    tab: int = opened["tab"]
    assert (await a.ask({"kind": "browser_view", "seat": seat, "tab": tab}))["ok"]
    await a.until(lambda: any(f.tab == tab for f in a.frames))  # a key frame may come late
    return tab


async def click(a: Client) -> None:
    """Take control and press the page's button (a user gesture: WebAudio may start)."""
    await a.send({"kind": "browser_control", "take": True})
    await a.until(lambda: a.kinds("browser_view")[-1]["controller"] is not None)
    for down in (True, False):
        press = {"press": {"x": 100, "y": 100, "button": "left", "down": down}}
        await a.send({"kind": "browser_input", "seq": next(_input_seq), "event": press})


async def heard(a: Client, tab: int, count: int, after: int = 0) -> list[AudioFrame]:
    """The next `count` kind-2 frames of `tab` past seq `after`."""

    def frames() -> list[AudioFrame]:
        return [f for f in a.audio if f.tab == tab and f.seq > after]

    await a.until(lambda: len(frames()) >= count)
    return frames()[:count]


async def heard_tone(a: Client, tab: int, count: int, after: int = 0) -> list[AudioFrame]:
    """`tab`'s frames past seq `after`: `count` of them, and more until they hold `CYCLES` clean
    periods (under load the renderer's dropouts can leave too few in `count`)."""
    frames = await heard(a, tab, count, after)
    while len(periods(frames)) < CYCLES:
        frames = await heard(a, tab, len(frames) + 1, after)
    return frames


async def quiet(a: Client) -> None:
    """Navigate the viewed tab away and close the client once the page is gone: a profile's tabs
    share one sink, so a tone still playing would be heard in the next test's tab."""
    tab = a.kinds("browser_view")[-1]["tab"]

    def gone() -> bool:  # the tone page was the tab's first: now there is one to go back to
        return any(m["tab"] == tab and m["can_back"] for m in a.kinds("browser_nav_state"))

    with contextlib.suppress(Exception):
        await a.send({"kind": "browser_navigate", "url": "about:blank"})
        await a.until(gone)
    await a.close()


async def test_a_tab_playing_a_tone_reaches_its_viewer_as_kind_2_frames(
    audio_served: Served, site: str
) -> None:
    a = await connect(audio_served)
    tab = await view_tone(a, site, SEAT, "hz=440")
    assert (await a.ask({"kind": "browser_tabs", "seat": SEAT}))["tabs"]["audio_off"] is None
    await click(a)
    frames = await heard_tone(a, tab, SECOND_SECONDS)
    assert {(f.profile, f.tab, f.rate, f.channels) for f in frames} == {
        (a.frames[0].profile, tab, 48000, 2)
    }
    seqs = [f.seq for f in frames]
    assert seqs[0] < 10  # numbered per tab from 1; a frame late under load is dropped, unsent
    assert seqs == sorted(set(seqs))
    assert {len(f.samples) for f in frames} == {FRAME_BYTES}
    hz, level = tone(frames)
    assert abs(hz - 440) <= 2
    assert level > 5000  # gain 0.3 of full scale
    await quiet(a)


async def test_two_profiles_with_different_tones_never_mix(audio_served: Served, site: str) -> None:
    a, b = await connect(audio_served), await connect(audio_served)
    tab_a = await view_tone(a, site, SEAT, "hz=440")
    tab_b = await view_tone(b, site, OTHER, "hz=880")
    await click(a)
    await click(b)
    frames_a = await heard_tone(a, tab_a, SECOND_SECONDS)
    frames_b = await heard_tone(b, tab_b, SECOND_SECONDS)
    assert frames_a[0].profile != frames_b[0].profile
    assert abs(tone(frames_a)[0] - 440) <= 2
    assert abs(tone(frames_b)[0] - 880) <= 2
    assert never_mixed(frames_a, 440, 880)
    assert never_mixed(frames_b, 880, 440)
    await quiet(a)
    await quiet(b)


async def test_a_silent_page_sends_no_frames(audio_served: Served, site: str) -> None:
    """The page plays one second of silence (its AudioContext running, the sink read), then a
    tone: the first frame the viewer gets is the tone's, numbered 1."""
    a = await connect(audio_served)
    tab = await view_tone(a, site, SEAT, "hz=660&after=1")
    await click(a)
    frames = await heard_tone(a, tab, SECOND_SECONDS // 2)
    assert frames[0].seq < 10  # the silent second numbered nothing (late frames aside)
    first = np.frombuffer(frames[0].samples, "<i2")
    assert np.abs(first.astype(int)).max() > SILENT_PEAK
    assert abs(tone(frames)[0] - 660) <= 2
    await quiet(a)


async def test_a_muted_viewer_hears_nothing_while_another_does(
    audio_served: Served, site: str
) -> None:
    a, b = await connect(audio_served), await connect(audio_served)
    tab = await view_tone(a, site, SEAT, "hz=440")
    assert (await b.ask({"kind": "browser_view", "seat": SEAT, "tab": tab}))["ok"]
    await click(a)
    await heard(a, tab, 5)
    assert await a.ask({"kind": "browser_audio", "on": False}) == {"ok": True}
    muted_at = max(f.seq for f in a.audio if f.tab == tab)
    later = (await heard(b, tab, 1, after=muted_at))[0].seq
    await heard(b, tab, SECOND_SECONDS // 2, after=later)
    pongs = len(a.kinds("pong"))
    await a.send({"kind": "ping"})  # answered after every frame queued before it
    await a.until(lambda: len(a.kinds("pong")) > pongs)
    assert [f.seq for f in a.audio if f.tab == tab and f.seq >= later] == []
    assert await a.ask({"kind": "browser_audio", "on": True}) == {"ok": True}
    await heard(a, tab, 5, after=later)
    await b.close()
    await quiet(a)


async def test_a_stalled_viewer_is_cut_to_a_bound_while_a_fast_one_hears_on(
    audio_served: Served, site: str
) -> None:
    url, _, service = audio_served
    a = await connect(audio_served)
    tab = await view_tone(a, site, SEAT, "hz=440")
    surface = ("acme/default", tab)
    async with RawClient() as stalled:
        await stalled.open(urlsplit(url).port or 0, receive_buffer=4096)
        stalled.send_json({"kind": "browser_view", "seat": SEAT, "tab": tab})
        await a.until(lambda: a.kinds("browser_view")[-1]["viewers"] == 2)
        (_, slow) = service.table.viewers(surface)
        connection = slow.connection
        stream = ("audio", a.frames[0].profile, tab)
        await click(a)
        pending: list[int] = []
        seen = 0
        full = AUDIO_LIMIT - 2 * (FRAME_BYTES + 14)

        def full_then_a_second_more() -> bool:
            """Record the slow viewer's queue at each frame the fast one gets; true once the
            queue has reached its bound and the fast viewer got a second more."""
            nonlocal seen
            fresh = [f for f in a.audio if f.tab == tab][seen:]
            seen += len(fresh)
            pending.extend(connection.stream_pending(stream) for _ in fresh)
            reached = next((i for i, size in enumerate(pending) if size >= full), None)
            return reached is not None and len(pending) - reached >= SECOND_SECONDS

        await a.until(full_then_a_second_more)
        assert max(pending) <= AUDIO_LIMIT
    await quiet(a)


def worker_process(name: str) -> psutil.Process:
    """This process's worker whose name starts with `name`."""
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if child.environ().get("FORGE_WORKER_NAME", "").startswith(name):
                return child
    raise LookupError(name)


def pulseaudio() -> psutil.Process:
    """The sound-server kind's running daemon (one just killed may linger, unreaped, or vanish
    while it is looked at: neither counts)."""
    running = []
    for child in worker_process("audio").children():
        with contextlib.suppress(psutil.Error):
            if child.name() == "pulseaudio" and child.status() != psutil.STATUS_ZOMBIE:
                running.append(child)
    (daemon,) = running
    return daemon


async def test_kill_9_of_the_daemon_and_the_tab_sounds_again(
    audio_served: Served, site: str
) -> None:
    a = await connect(audio_served)
    tab = await view_tone(a, site, SEAT, "hz=440")
    await a.ask({"kind": "browser_tabs", "seat": SEAT})
    await click(a)
    before = (await heard(a, tab, 10))[-1].seq
    host = worker_process("browser-acme-default")
    video_before = max(f.seq for f in a.frames if f.tab == tab)
    daemon = pulseaudio()
    daemon.kill()
    pushes = lambda: [m["audio_off"] for m in a.kinds("browser_tabs")]  # noqa: E731
    await a.until(lambda: any(pushes()))
    trouble = next(why for why in pushes() if why)
    assert "sound server" in trouble
    await a.until(lambda: pushes()[-1] is None)
    assert pulseaudio().pid != daemon.pid
    await click(a)  # Chromium's stream that was playing stays dead: the page plays again
    frames = await heard_tone(a, tab, SECOND_SECONDS // 2, after=before)
    hz, level = tone(frames)
    assert abs(hz - 440) <= 2
    assert level > 5000
    assert worker_process("browser-acme-default").pid == host.pid  # the host and its tab stayed
    await a.until(lambda: any(f.tab == tab and f.seq > video_before for f in a.frames))
    await quiet(a)


@pytest.fixture
def no_pulseaudio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audio_protocol, "PULSEAUDIO", "forge-no-such-pulseaudio")


async def test_without_pulseaudio_the_row_says_why_and_frames_flow(
    tmp_path: Path, site: str, no_pulseaudio: None
) -> None:
    services: list[BrowserService] = []
    async with serving(tmp_path, services=services) as served:
        a = await client(served)
        tab = await view_tone(a, site, SEAT, "hz=440")
        tabs = (await a.ask({"kind": "browser_tabs", "seat": SEAT}))["tabs"]
        assert tabs["audio_off"].startswith("no forge-no-such-pulseaudio on this machine")
        seq = max(f.seq for f in a.frames if f.tab == tab)
        await click(a)
        await a.until(lambda: any(f.tab == tab and f.seq > seq for f in a.frames))
        assert [row.kind for row in services[0].manager.rows()] == ["browser"]
        await a.close()
