"""The output policy: echoes go at once, floods go in big numbered kind-4 frames."""

from __future__ import annotations

from forge.wire.binary import TERMINAL_OUTPUT_HEADER
from forge.workers.terminal.batcher import MAX_BYTES, SEQ_LIMIT, OutputBatcher


def test_output_after_silence_goes_once_drained() -> None:
    batcher = OutputBatcher(terminal=3)
    assert batcher.push(b"h", now=10.0) == []
    assert batcher.push(b"i", now=10.0) == []
    [frame] = batcher.drained(10.0)
    assert TERMINAL_OUTPUT_HEADER.unpack_from(frame.wire) == (4, 3, 1)
    assert frame.wire[TERMINAL_OUTPUT_HEADER.size :] == b"hi" == frame.data
    assert batcher.deadline() is None
    assert batcher.drained(10.0) == []


def test_quiet_is_measured_from_the_last_frame() -> None:
    batcher = OutputBatcher(terminal=1)
    batcher.push(b"$ ", now=5.0)
    batcher.drained(5.0)
    batcher.push(b"a", now=5.0004)
    assert batcher.drained(5.0004) == []
    assert batcher.expire(5.0024) != []
    batcher.push(b"b", now=5.0040)
    [echo] = batcher.drained(5.0040)
    assert echo.data == b"b"


def test_output_that_keeps_coming_waits_for_the_deadline() -> None:
    batcher = OutputBatcher(terminal=1)
    batcher.push(b"a", now=10.0)
    batcher.drained(10.0)
    assert batcher.push(b"b", now=10.0005) == []
    assert batcher.drained(10.0005) == []
    assert batcher.push(b"c", now=10.001) == []
    assert batcher.drained(10.001) == []
    assert batcher.deadline() == 10.0005 + batcher.max_delay
    assert batcher.expire(now=10.002) == []
    [frame] = batcher.expire(now=10.0026)
    assert (frame.seq, frame.data) == (2, b"bc")


def test_a_full_batch_goes_without_waiting() -> None:
    batcher = OutputBatcher(terminal=1)
    batcher.push(b"x", now=1.0)
    batcher.drained(1.0)
    chunk = b"y" * 4096
    frames = []
    for i in range(MAX_BYTES // len(chunk)):
        frames += batcher.push(chunk, now=1.0 + i * 1e-5)
    [frame] = frames
    assert len(frame.data) == MAX_BYTES
    assert batcher.pending == 0


def test_flush_sends_what_is_pending_and_seq_wraps_past_zero() -> None:
    batcher = OutputBatcher(terminal=1, seq=SEQ_LIMIT - 2)
    batcher.push(b"a", now=1.0)
    [last] = batcher.drained(1.0)
    assert last.seq == SEQ_LIMIT - 1
    batcher.push(b"b", now=1.0)
    [frame] = batcher.flush(1.0)
    assert (frame.seq, frame.data) == (1, b"b")
    assert batcher.flush(1.0) == []
