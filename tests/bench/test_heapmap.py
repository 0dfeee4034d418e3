"""`bench/heapmap.py`: glibc's chunks walked from outside a live process, and what they hold."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from collections.abc import Iterator

import pytest

from .scripts import load

heapmap = load("heapmap")

HOLDER = """
import os
held = [bytes([n % 256]) * 3000 for n in range(2000)]  # 6 MB of 3000-byte bytes objects
print("ready", flush=True)
os.read(0, 1)  # waits allocating nothing on the heap (readline's buffer moved its top mid-read)
"""


def chunk(size: int, *, prev_in_use: bool = True) -> bytes:
    """A chunk header (prev_size, size | PREV_INUSE) and zeros to its size."""
    return struct.pack("<QQ", 0, size | int(prev_in_use)) + bytes(size - 16)


def test_the_walk_tells_live_from_free_by_the_next_chunks_bit_and_ends_at_the_top() -> None:
    heap = (
        chunk(48)  # live: the next says its predecessor is in use
        + chunk(4096)  # free: the next says so
        + chunk(64, prev_in_use=False)  # live
        + chunk(8192)  # the top
    )
    found = heapmap.walk(heap)
    assert found.live == [(0, 48), (48 + 4096, 64)]
    assert found.free == [(48, 4096)]
    assert found.top == (48 + 4096 + 64, 8192)
    assert found.stopped_at is None


def test_a_header_that_makes_no_sense_ends_the_walk_where_it_stands() -> None:
    found = heapmap.walk(chunk(48) + struct.pack("<QQ", 0, 8) + bytes(64))
    assert (found.live, found.stopped_at) == ([], 48)


def test_a_page_counts_the_live_bytes_that_cover_it() -> None:
    covered = heapmap.live_per_page([(0, 100), (4000, 200), (9000, 8192)], pages=5)
    assert covered == [100 + 96, 104, 12288 - 9000, 4096, 9000 + 8192 - 16384]


@pytest.fixture
def holder() -> Iterator[subprocess.Popen[str]]:
    """A Python process holding 2,000 bytes objects of 3,000 bytes on its heap."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n"
    yield process
    process.communicate("\n", timeout=30)


def test_a_live_processs_heap_shows_the_objects_it_holds(holder: subprocess.Popen[str]) -> None:
    found = heapmap.report(holder.pid)
    assert found["walked_to"] is None  # a process standing still is walked to its top
    assert found["live_by_type_mb"]["bytes"] >= 6.0
    assert found["live_by_size_mb"]["<=4096"] >= 6.0
    assert found["resident_mb"] >= found["live"]["mb"] >= 6.0
    assert found["kernel_resident_mb"] >= 6.0
    json.dumps(found)  # the report is JSON as printed
