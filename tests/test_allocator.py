"""The supervisor's allocator settings: freed frame-sized blocks go back to the system."""

from __future__ import annotations

import subprocess
import sys

import pytest

BLOCKS = """
import sys
import psutil
from forge.allocator import tune_for_long_life

if sys.argv[1] == "tuned":
    assert tune_for_long_life()
me = psutil.Process()
big = bytearray(8 * 1024 * 1024)  # a large block freed: glibc raises its mmap threshold
del big
before = me.memory_info().rss
# Filled, not zeroed: calloc may hand out fresh pages untouched, which are never resident.
frames, pins = [], []
for _ in range(64):  # 32 MiB of frame-sized blocks, each followed by a small one that outlives it
    frames.append(bytearray(b"f") * (512 * 1024))
    pins.append(bytearray(b"p") * 1024)  # so no freed frame is at the heap's top, where glibc trims
del frames
print((me.memory_info().rss - before) // (1024 * 1024))
"""


def kept_mib(mode: str) -> int:
    """MiB still resident after the frame-sized blocks are freed, in a fresh interpreter."""
    run = subprocess.run(
        [sys.executable, "-c", BLOCKS, mode], capture_output=True, text=True, check=True
    )
    return int(run.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_freed_frame_sized_blocks_leave_the_tuned_process_and_stay_in_an_untuned_one() -> None:
    assert kept_mib("tuned") < 4
    assert kept_mib("untuned") >= 24  # the growth the tuning exists for
