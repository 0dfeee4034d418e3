"""The supervisor's allocator settings: freed frame-sized blocks go back to the system."""

from __future__ import annotations

import subprocess
import sys

import pytest

BLOCKS = """
import ctypes
import sys
from forge.allocator import tune_for_long_life

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
if sys.argv[1] == "tuned":
    assert tune_for_long_life()
big = bytearray(8 * 1024 * 1024)  # a large block freed: glibc raises its mmap threshold
del big
before = libc.mallinfo2().fordblks
frames, pins = [], []
for _ in range(64):  # 32 MiB of frame-sized blocks, each followed by a small one that outlives it
    frames.append(bytearray(b"f") * (512 * 1024))
    pins.append(bytearray(b"p") * 1024)  # so no freed frame is at the heap's top, where glibc trims
del frames
print((libc.mallinfo2().fordblks - before) // (1024 * 1024))
"""


def kept_mib(mode: str) -> int:
    """MiB the allocator keeps, freed but not given back to the system (glibc's own count,
    `mallinfo2().fordblks`), after the frame-sized blocks are freed, in a fresh interpreter.
    Not the resident size: that also moves with whatever else the machine is doing."""
    run = subprocess.run(
        [sys.executable, "-c", BLOCKS, mode], capture_output=True, text=True, check=True
    )
    return int(run.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_freed_frame_sized_blocks_leave_the_tuned_process_and_stay_in_an_untuned_one() -> None:
    assert kept_mib("tuned") < 4
    assert kept_mib("untuned") >= 24  # the growth the tuning exists for
