"""The output policy: interactive output goes at once, floods go in big numbered kind-4 frames."""

from __future__ import annotations

from forge.wire.binary import TERMINAL_OUTPUT_HEADER
from forge.workers.terminal.batcher import INTERACTIVE_BYTES, MAX_BYTES, SEQ_LIMIT, OutputBatcher

READ = b"x" * 4096


def test_small_output_goes_once_the_pty_is_drained() -> None:
    batcher = OutputBatcher(terminal=3)
    assert batcher.push(b"h", now=10.0) == []
    assert batcher.push(b"i", now=10.0) == []
    [frame] = batcher.drained(10.0)
    assert TERMINAL_OUTPUT_HEADER.unpack_from(frame.wire) == (4, 3, 1)
    assert frame.wire[TERMINAL_OUTPUT_HEADER.size :] == b"hi" == frame.data
    assert batcher.deadline() is None
    assert batcher.drained(10.0) == []


def test_back_to_back_echoes_are_not_held() -> None:
    batcher = OutputBatcher(terminal=1)
    for step in range(10):
        now = 5.0 + step * 0.0001
        batcher.push(b"a", now=now)
        [echo] = batcher.drained(now)
        assert echo.data == b"a"


def test_a_flood_is_batched_until_the_deadline_or_the_size() -> None:
    batcher = OutputBatcher(terminal=1)
    batcher.push(READ[:INTERACTIVE_BYTES], now=1.0)
    assert len(batcher.drained(1.0)) == 1
    assert batcher.push(READ, now=1.0001) == []
    assert batcher.drained(1.0001) == []
    assert batcher.push(READ, now=1.0002) == []
    assert batcher.drained(1.0002) == []
    assert batcher.deadline() == 1.0001 + batcher.max_delay
    assert batcher.expire(now=1.002) == []
    [frame] = batcher.expire(now=1.0022)
    assert (frame.seq, len(frame.data)) == (2, 2 * len(READ))
    frames = []
    for i in range(MAX_BYTES // len(READ)):
        frames += batcher.push(READ, now=1.0023 + i * 1e-6)
    [full] = frames
    assert len(full.data) == MAX_BYTES
    assert batcher.pending == 0


def test_flush_sends_what_is_pending_and_seq_wraps_past_zero() -> None:
    batcher = OutputBatcher(terminal=1, seq=SEQ_LIMIT - 2)
    batcher.push(b"a", now=1.0)
    [last] = batcher.drained(1.0)
    assert last.seq == SEQ_LIMIT - 1
    batcher.push(READ, now=1.0)
    batcher.push(READ, now=1.0)
    assert batcher.drained(1.0) == []
    [frame] = batcher.flush(1.0)
    assert (frame.seq, len(frame.data)) == (1, 2 * len(READ))
    assert batcher.flush(1.0) == []
