"""The screen model behind the hot path: skips keep modes, catch-up gives an exact seq, a
resize lands after the bytes written before it. A real model (xterm.js under node)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from forge.testing.xterm_reference import Write, cells, text
from forge.workers.terminal.feeder import ScreenFeeder
from forge.workers.terminal.model import ScreenModel
from forge.workers.terminal.modes import ModeTracker


def lines(count: int, start: int = 1) -> bytes:
    return b"".join(b"%d\r\n" % n for n in range(start, start + count))


@pytest.fixture
async def model() -> AsyncIterator[ScreenModel]:
    running = await ScreenModel.start(10, 3)
    yield running
    await running.close()


async def drawn(feeder: ScreenFeeder) -> dict[str, object]:
    """What a viewer draws from a view asked now: its xterm.js after the view's stream."""
    feeder.catch_up()
    screen = await feeder.model.view()
    return cells(feeder.model.cols, feeder.model.rows, [Write(screen.encode())])


async def test_slow_feed_then_catch_up_reports_the_last_frame(model: ScreenModel) -> None:
    feeder = ScreenFeeder(model)
    feeder.append(1, b"one\r\n")
    feeder.append(2, b"two\r\n")
    assert feeder.feed(3) == 3
    assert feeder.seq == 0
    assert feeder.catch_up() == 2
    assert text(await drawn(feeder))[:2] == ["one".ljust(10), "two".ljust(10)]


async def test_a_flood_is_skipped_to_its_tail_and_the_screen_is_still_right(
    model: ScreenModel,
) -> None:
    feeder = ScreenFeeder(model, backlog_limit=4096, tail=1024)
    data = lines(20000)
    for seq, start in enumerate(range(0, len(data), 1000), start=1):
        feeder.append(seq, data[start : start + 1000])
    assert feeder.pending <= 4096 + 1000
    assert feeder.catch_up() == seq
    assert feeder.skipped_bytes > 0
    assert [row.strip() for row in text(await drawn(feeder))[-3:]] == ["19999", "20000", ""]


async def test_mode_switches_in_skipped_bytes_survive(model: ScreenModel) -> None:
    feeder = ScreenFeeder(model, backlog_limit=2048, tail=512)
    feeder.append(1, b"$ vi\r\n\x1b[?1049h\x1b[?2004h\x1b[?1000h\x1b[?25l\x1b[2;3r" + lines(500))
    feeder.append(2, b"\x1b[?1000l" + lines(500, 1000))
    assert feeder.skipped_bytes > 0
    screen = await drawn(feeder)
    assert screen["active"] == "alternate"
    modes = screen["modes"]
    assert isinstance(modes, dict)
    assert modes["bracketedPasteMode"] is True
    assert modes["mouseTrackingMode"] == "none"


def test_mode_tracker_joins_a_switch_split_across_reads() -> None:
    tracker = ModeTracker()
    tracker.scan(b"text \x1b[?10")
    tracker.scan(b"49h more \x1b]2;my ti")
    tracker.scan(b"tle\x07")
    assert tracker.replay() == b"\x1b[?1049h\x1b]2;my title\x07"
    assert tracker.replay() == b""  # replayed once, then forgotten


def test_a_reset_in_skipped_bytes_replays_the_reset_first() -> None:
    tracker = ModeTracker()
    tracker.scan(b"\x1b[?2004h\x1b[5;9r\x1bc\x1b[?7l\x1b[3;4r")
    assert tracker.replay() == b"\x1bc\x1b[?7l\x1b[3;4r"


async def test_resize_sends_the_backlog_at_the_old_size_first(model: ScreenModel) -> None:
    feeder = ScreenFeeder(model)
    feeder.append(1, b"0123456789abc\r\n")
    feeder.resize(columns=20, lines=3)
    assert feeder.seq == 1
    # Written at 10 columns the line wrapped; widened, xterm.js joins it again (a row that holds
    # the cursor it leaves for the shell to redraw).
    assert text(await drawn(feeder))[0] == "0123456789abc".ljust(20)
