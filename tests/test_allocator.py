"""The supervisor's allocator: freed frame-sized blocks, and freed holes in the heap, go back to
the system."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

MALLINFO = """
import json
import sys
from forge.allocator import give_back_freed, heap, tune_for_long_life

assert heap() is not None  # glibc's own account of its heap
"""
"""What both processes below start with."""

BLOCKS = (
    MALLINFO
    + """if sys.argv[1] == "tuned":
    assert tune_for_long_life()
big = bytearray(8 * 1024 * 1024)  # a large block freed: glibc raises its mmap threshold
del big
before = heap()
probe = bytearray(b"f") * (512 * 1024)
raised = heap().mmapped_blocks == before.mmapped_blocks  # a frame-sized block: from the heap
del probe
before = before.free
frames, pins = [], []
for _ in range(64):  # 32 MiB of frame-sized blocks, each followed by a small one that outlives it
    frames.append(bytearray(b"f") * (512 * 1024))
    pins.append(bytearray(b"p") * 1024)  # so no freed frame is at the heap's top, where glibc trims
del frames
kept = (heap().free - before) // (1024 * 1024)
print(json.dumps({"kept_mib": kept, "threshold_raised": raised}))
"""
)


MIB = 1024 * 1024


def glibc_defaults() -> dict[str, str]:
    """This environment without the machine's own malloc settings."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("MALLOC_") and name != "GLIBC_TUNABLES"
    }


def freed_blocks(mode: str) -> dict[str, int | bool]:
    """In a fresh interpreter: the MiB the allocator keeps, freed but not given back to the
    system (glibc's own count, `allocator.heap().free`), after the frame-sized blocks are freed,
    and whether freeing the large block raised the mmap threshold. Not the resident size: that
    also moves with whatever else the machine is doing. The machine's own malloc settings are
    left out, so the process starts from glibc's defaults."""
    run = subprocess.run(
        [sys.executable, "-c", BLOCKS, mode],
        capture_output=True,
        text=True,
        check=True,
        env=glibc_defaults(),
    )
    answer: dict[str, int | bool] = json.loads(run.stdout)
    return answer


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_freed_frame_sized_blocks_leave_the_tuned_process_and_stay_in_an_untuned_one() -> None:
    tuned = freed_blocks("tuned")
    assert not tuned["threshold_raised"]
    assert tuned["kept_mib"] < 4
    untuned = freed_blocks("untuned")
    if not untuned["threshold_raised"]:
        pytest.skip(f"this glibc did not raise its mmap threshold untuned: {untuned}")
    assert untuned["kept_mib"] >= 24  # the growth the tuning exists for


HOLES = (
    MALLINFO
    + """
def resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096

assert tune_for_long_life()
chunks, pins = [], []
for index in range(640):  # 640 terminal-chunk-sized blocks, each with a small one after it
    chunks.append(bytearray(b"c") * (64 * 1024))
    pins.append(bytearray(b"p") * 1024)
del chunks[::2]  # every other chunk freed: 20 MiB of holes between blocks still in use
holes = heap().free
before = resident()
gave = give_back_freed()
print(json.dumps({"holes": holes, "gave": gave, "released": before - resident()}))
"""
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_freed_holes_between_live_blocks_go_back_to_the_system() -> None:
    run = subprocess.run(
        [sys.executable, "-c", HOLES], capture_output=True, text=True, check=True,
        env=glibc_defaults(),
    )  # fmt: skip
    answer = json.loads(run.stdout)
    if answer["holes"] < 16 * MIB:
        pytest.skip(f"the freed chunks were not left on this glibc's heap: {answer}")
    assert answer["gave"], answer
    assert answer["released"] >= 16 * MIB, answer  # the holes' pages, no longer resident
