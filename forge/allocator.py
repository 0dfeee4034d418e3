"""The C allocator's settings for a process that runs for weeks (the supervisor).

glibc raises its mmap threshold each time a large block served by mmap is freed (up to 32 MiB
on 64-bit), after which blocks of that size (browser frames of 50 KiB-1 MiB, bulk socket
writes) come from the heap instead, where one long-lived block above them keeps the freed
space from ever going back to the system: resident memory creeps up under steady load. A
fixed threshold keeps such blocks mmapped, so each is returned whole when freed, whenever the
heap has no free space that fits them (glibc maps a block only when it would otherwise grow
the heap for it: a fit in a hole or the top is taken first). Each thread
that allocates may also get an arena of its own (8 per core by default); the supervisor's few
helper threads share two.

Blocks that stay on the heap (terminal chunks of up to 64 KiB, messages) still leave holes
between long-lived ones when freed, and glibc gives a hole back only at the heap's top: resident
memory counted them for good (a traced chaos run's supervisor held 5 MiB of such free space
after 5 minutes, 12 MiB after 20). `give_back_freed`, called every `TRIM_EVERY_S`, hands their
whole pages back (`malloc_trim`): about a millisecond when little is free (measured in a fresh
interpreter; 16 ms for 49 MB of holes). `heap` is glibc's own account of its heap, for the
tests and the chaos bench.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from dataclasses import dataclass

M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

MMAP_THRESHOLD_BYTES = 128 * 1024
"""glibc's own starting threshold, held fixed (setting it turns the dynamic raise off)."""

ARENA_MAX = 2

TRIM_EVERY_S = 10.0
"""How often the supervisor gives the heap's freed pages back. Pages freed since the last trim
count as resident until the next one; a trim costs about a millisecond when little is free."""


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                     "uordblks", "fordblks", "keepcost")
    ]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Heap:
    """glibc's account of the process's allocations (`mallinfo2`), in bytes."""

    in_use: int
    """Allocated from the heap (the main arena and the others)."""
    free: int
    """Freed on the heap and not given back: holes, and the top until it is trimmed."""
    arena: int
    """The heap's size, from the system (`sbrk` and the other arenas' mappings)."""
    mmapped: int
    """In blocks mmapped one by one (those at or over the mmap threshold)."""
    mmapped_blocks: int
    """How many such blocks: whether a block of some size came from mmap or from the heap."""


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (which has `mallopt` and `malloc_trim`), else None.
    Looked up once: `find_library` runs `ldconfig`."""
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    libc = ctypes.CDLL(name)
    if getattr(libc, "mallopt", None) is None or getattr(libc, "malloc_trim", None) is None:
        return None  # musl has neither
    return libc


def tune_for_long_life() -> bool:
    """Fix the mmap threshold and cap the arenas (glibc only; elsewhere nothing changes).

    Call it before the process starts threads. True when glibc took both settings."""
    libc = _glibc()
    if libc is None:
        return False
    mallopt = libc.mallopt
    took_threshold = int(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) == 1
    took_arenas = int(mallopt(M_ARENA_MAX, ARENA_MAX)) == 1
    return took_threshold and took_arenas


def give_back_freed() -> bool:
    """Hand the whole free pages inside the heap back to the system (glibc only). True when
    some memory was given back."""
    libc = _glibc()
    return libc is not None and int(libc.malloc_trim(0)) == 1


def heap() -> Heap | None:
    """The heap's figures now (glibc 2.33 and later; None elsewhere)."""
    libc = _glibc()
    mallinfo2 = None if libc is None else getattr(libc, "mallinfo2", None)
    if mallinfo2 is None:
        return None
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return Heap(
        in_use=info.uordblks, free=info.fordblks, arena=info.arena, mmapped=info.hblkhd,
        mmapped_blocks=info.hblks,
    )  # fmt: skip
