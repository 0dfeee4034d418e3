"""The C allocator's settings for a process that runs for weeks (the supervisor).

glibc raises its mmap threshold each time a large block served by mmap is freed (up to 32 MiB
on 64-bit), after which blocks of that size (browser frames of 50 KiB-1 MiB, bulk socket
writes) come from the heap instead, where one long-lived block above them keeps the freed
space from ever going back to the system: resident memory creeps up under steady load. A
fixed threshold keeps such blocks mmapped, so each is returned whole when freed. Each thread
that allocates may also get an arena of its own (8 per core by default); the supervisor's few
helper threads share two.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

MMAP_THRESHOLD_BYTES = 128 * 1024
"""glibc's own starting threshold, held fixed (setting it turns the dynamic raise off)."""

ARENA_MAX = 2


def tune_for_long_life() -> bool:
    """Fix the mmap threshold and cap the arenas (glibc only; elsewhere nothing changes).

    Call it before the process starts threads. True when glibc took both settings."""
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:  # musl has no mallopt
        return False
    took_threshold = int(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) == 1
    took_arenas = int(mallopt(M_ARENA_MAX, ARENA_MAX)) == 1
    return took_threshold and took_arenas
