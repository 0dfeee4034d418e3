"""The screen model behind the hot path: skips keep modes, catch-up gives an exact seq."""

from __future__ import annotations

import pyte.modes as mo

from forge.workers.terminal.feeder import ScreenFeeder
from forge.workers.terminal.modes import ModeTracker
from forge.workers.terminal.render import render_screen
from forge.workers.terminal.screen import TerminalScreen


def lines(count: int, start: int = 1) -> bytes:
    return b"".join(b"%d\r\n" % n for n in range(start, start + count))


def test_slow_feed_then_catch_up_reports_the_last_frame() -> None:
    feeder = ScreenFeeder(TerminalScreen(20, 4))
    feeder.append(1, b"one\r\n")
    feeder.append(2, b"two\r\n")
    assert feeder.feed(3) == 3
    assert feeder.seq == 0
    assert feeder.catch_up() == 2
    assert feeder.screen.display[:2] == ["one".ljust(20), "two".ljust(20)]


def test_a_flood_is_skipped_to_its_tail_and_the_screen_is_still_right() -> None:
    feeder = ScreenFeeder(TerminalScreen(10, 3), backlog_limit=4096, tail=1024)
    data = lines(20000)
    for seq, start in enumerate(range(0, len(data), 1000), start=1):
        feeder.append(seq, data[start : start + 1000])
    assert feeder.pending <= 4096 + 1000
    assert feeder.catch_up() == seq
    assert feeder.skipped_bytes > 0
    assert [row.strip() for row in feeder.screen.display] == ["19999", "20000", ""]


def test_mode_switches_in_skipped_bytes_survive() -> None:
    feeder = ScreenFeeder(TerminalScreen(10, 3), backlog_limit=2048, tail=512)
    feeder.append(1, b"$ vi\r\n\x1b[?1049h\x1b[?2004h\x1b[?1000h\x1b[?25l\x1b[2;3r" + lines(500))
    feeder.append(2, b"\x1b[?1000l" + lines(500, 1000))
    feeder.catch_up()
    screen = feeder.screen
    assert screen.in_alternate
    assert {2004 << 5, mo.DECTCEM >> 0} & screen.mode == {2004 << 5}
    assert 1000 << 5 not in screen.mode
    assert screen.margins is not None
    assert (screen.margins.top, screen.margins.bottom) == (1, 2)
    assert "\x1b[?1049h" in render_screen(screen)


def test_mode_tracker_joins_a_switch_split_across_reads() -> None:
    tracker = ModeTracker()
    tracker.scan(b"text \x1b[?10")
    tracker.scan(b"49h more \x1b]2;my ti")
    tracker.scan(b"tle\x07")
    screen = TerminalScreen(10, 3)
    tracker.apply(screen)
    assert screen.in_alternate
    assert screen.title == "my title"


def test_a_reset_in_skipped_bytes_resets_the_screen() -> None:
    tracker = ModeTracker()
    screen = TerminalScreen(10, 3)
    screen.set_mode(2004, private=True)
    tracker.scan(b"\x1b[?1h\x1bc\x1b[?7l")
    tracker.apply(screen)
    assert 2004 << 5 not in screen.mode
    assert 1 << 5 not in screen.mode
    assert mo.DECAWM not in screen.mode


def test_resize_parses_the_backlog_at_the_old_size_first() -> None:
    feeder = ScreenFeeder(TerminalScreen(10, 3))
    feeder.append(1, b"0123456789abc")
    feeder.resize(columns=20, lines=3)
    assert feeder.screen.display[0] == "0123456789".ljust(20)
    assert feeder.seq == 1
