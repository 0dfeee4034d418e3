"""What holds a live process's glibc main heap resident: its chunks, page by page, from outside.

    python -P bench/heapmap.py PID [--json OUT]

Reads the process's `[heap]` mapping through /proc/PID/mem and which of its pages are resident
through /proc/PID/pagemap (root, or the same user with ptrace allowed), then walks glibc's
chunks from the heap's start to its top. Each resident page is counted by how much of it live
chunks cover: a page a live chunk only grazes stays resident for that chunk alone, which
`malloc_trim` cannot give back (it returns only whole pages inside free chunks). For the live
chunks on sparse resident pages, and for the highest live chunks (those that keep the heap's
span from shrinking), it prints their sizes and, where the chunk holds a Python object, the
object's type (read from the object's header: ob_type -> tp_name).

The process keeps running while it is read, so a chunk split or merged during the read may
end the walk early; the walk says how far it got. Chunks glibc keeps in its thread caches and
fast bins count as live (their in-use bit stays set); `malloc_trim` empties the fast bins.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import re
import struct
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import psutil

PAGE = 4096
SIZE_BITS = ~0x7
PREV_INUSE = 0x1
PRESENT, SWAPPED = 1 << 63, 1 << 62
"""A pagemap entry's bits: the page is in memory; it is swapped out or being migrated."""
FRAME_BITS = (1 << 55) - 1
"""A pagemap entry's page frame number (bits 0-54; zero unless root)."""
MIN_CHUNK = 32
SPARSE = 0.25
"""A resident page whose live chunks cover less than this share of it counts as sparse."""
TOP_LIVE = 40
"""The highest live chunks listed: what pins the heap's span."""
NAME = re.compile(r"[A-Za-z_][\w.]{1,79}")
"""What a type's name looks like: a pointer that only happened to point at text is no type."""
TOP_TYPES = 25
TOP_LARGEST = 12
"""The largest live chunks listed, with their first bytes."""
"""Types listed by the bytes their live chunks hold."""


@dataclass
class Mapping:
    start: int
    end: int


@dataclass
class Walk:
    """The walk's result: live and free chunks as (offset, size), and how far it got."""

    live: list[tuple[int, int]] = field(default_factory=list)
    free: list[tuple[int, int]] = field(default_factory=list)
    top: tuple[int, int] | None = None
    stopped_at: int | None = None
    """The offset where a chunk header made no sense (the process moved it mid-read)."""


def heap_mapping(pid: int) -> Mapping:
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        if line.endswith("[heap]"):
            start, end = (int(part, 16) for part in line.split()[0].split("-"))
            return Mapping(start, end)
    raise SystemExit(f"process {pid} has no [heap] mapping")


def read_heap(mem: BinaryIO, heap: Mapping, backed: list[bool]) -> bytes:
    """The heap's bytes, read page run by page run where the process has data, zeros
    elsewhere: reading a page given back (`MADV_DONTNEED`) would map the zero page there and
    show it present."""
    data = bytearray(heap.end - heap.start)
    page = 0
    while page < len(backed):
        if not backed[page]:
            page += 1
            continue
        run = page
        while run < len(backed) and backed[run]:
            run += 1
        mem.seek(heap.start + page * PAGE)
        data[page * PAGE : run * PAGE] = mem.read((run - page) * PAGE)
        page = run
    return bytes(data)


def zero_page_frame() -> int | None:
    """The frame number of the kernel's shared zero page (what a read of a never-written or
    given-back anonymous page maps), found by reading one such page of our own; None when
    frame numbers are hidden (not root)."""
    probe = mmap.mmap(-1, PAGE)
    try:
        address = ctypes.addressof(ctypes.c_char.from_buffer(probe))
        _ = probe[0]  # a read fault: the zero page is mapped here
        with open("/proc/self/pagemap", "rb") as pagemap:
            pagemap.seek(address // PAGE * 8)
            (entry,) = struct.unpack("<Q", pagemap.read(8))
        frame = entry & FRAME_BITS
        return frame or None
    finally:
        probe.close()


def resident_pages(pid: int, heap: Mapping) -> tuple[list[bool], list[bool]]:
    """Per page of the heap: whether it holds memory of its own (present, and not the zero page
    an earlier read of a given-back page maps, which counts nothing in the process's RSS), and
    whether it holds the process's data at all (present, or swapped or being migrated: the
    kernel moves pages under memory pressure, and a chunk header on such a page read as zeros
    ended the walk)."""
    pages = (heap.end - heap.start) // PAGE
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        pagemap.seek(heap.start // PAGE * 8)
        raw = pagemap.read(pages * 8)
    zero = zero_page_frame()
    entries = [entry for (entry,) in struct.iter_unpack("<Q", raw)]
    resident = [
        bool(entry & PRESENT) and (zero is None or entry & FRAME_BITS != zero) for entry in entries
    ]
    backed = [bool(entry & (PRESENT | SWAPPED)) for entry in entries]
    return resident, backed


def kernel_resident_mb(pid: int) -> float | None:
    """The kernel's own count of the heap's resident memory (smaps, through psutil as
    `bench/chaos.py` reads mappings), to check ours."""
    for mapping in psutil.Process(pid).memory_maps(grouped=False):
        if mapping.path == "[heap]":
            return round(mapping.rss / 1e6, 2)
    return None


def walk(data: bytes) -> Walk:
    """glibc's chunks from the heap's first to its top (`size` at +8; a chunk is in use when
    the next chunk's PREV_INUSE bit says so)."""
    result = Walk()
    offset = 0
    end = len(data)
    while offset + 16 <= end:
        size = struct.unpack_from("<Q", data, offset + 8)[0] & SIZE_BITS
        following = offset + size
        if size < MIN_CHUNK or following > end:
            result.stopped_at = offset
            return result
        if following + 16 > end:  # the last chunk: the top, free by definition
            result.top = (offset, size)
            return result
        in_use = struct.unpack_from("<Q", data, following + 8)[0] & PREV_INUSE
        (result.live if in_use else result.free).append((offset, size))
        offset = following
    return result


def live_per_page(live: list[tuple[int, int]], pages: int) -> list[int]:
    covered = [0] * pages
    for offset, size in live:
        first, last = offset // PAGE, (offset + size - 1) // PAGE
        for page in range(first, min(last, pages - 1) + 1):
            low, high = max(offset, page * PAGE), min(offset + size, (page + 1) * PAGE)
            covered[page] += high - low
    return covered


class Types:
    """Python type names of objects in chunks, read from the process's memory."""

    def __init__(self, mem: BinaryIO, data: bytes) -> None:
        self._mem = mem
        self._data = data
        self._names: dict[int, str | None] = {}

    def _read(self, address: int, size: int) -> bytes | None:
        try:
            self._mem.seek(address)
            return self._mem.read(size)
        except (OSError, ValueError, OverflowError):
            return None

    def _type_name(self, type_address: int) -> str | None:
        if type_address in self._names:
            return self._names[type_address]
        name = None
        header = self._read(type_address, 32)  # refcnt, ob_type, ob_size, tp_name
        if header is not None and len(header) == 32:
            name_address = struct.unpack_from("<Q", header, 24)[0]
            raw = self._read(name_address, 80)
            if raw:
                text = raw.split(b"\0", 1)[0]
                if text and all(32 < byte < 127 for byte in text):
                    name = text.decode()
        self._names[type_address] = name
        return name

    def hex(self, offset: int) -> str:
        """The chunk's first 32 bytes of memory, for a raw buffer whose type cannot be read."""
        return self._data[offset + 16 : offset + 48].hex()

    def of(self, offset: int) -> str:
        """The chunk's object's type: a plain object's header at the chunk's memory, a
        collected one's after the 16-byte GC header (and an object with a managed dict's after
        two more pointers); else the chunk is raw memory (a list's items, a dict's keys, a
        buffer of a library's)."""
        memory = offset + 16
        for header in (memory, memory + 16, memory + 32):
            if header + 16 > len(self._data):
                break
            type_address = struct.unpack_from("<Q", self._data, header + 8)[0]
            if type_address % 8 == 0 and type_address > PAGE:
                name = self._type_name(type_address)
                if name is not None and NAME.fullmatch(name):
                    return name
        return "raw"


def size_class(size: int) -> str:
    for bound in (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 65536, 131072):
        if size <= bound:
            return f"<={bound}"
    return ">128K"


def _totals(chunks: list[tuple[int, int]]) -> Counter[str]:
    """Bytes of chunks by size class."""
    totals = Counter[str]()
    for _, size in chunks:
        totals[size_class(size)] += size
    return totals


def report(pid: int) -> dict[str, object]:
    heap = heap_mapping(pid)
    resident, backed = resident_pages(pid, heap)
    with open(f"/proc/{pid}/mem", "rb") as mem:
        data = read_heap(mem, heap, backed)
        found = _report(pid, heap, data, resident, Types(mem, data))
    found["kernel_resident_mb"] = kernel_resident_mb(pid)
    return found


def _report(
    pid: int, heap: Mapping, data: bytes, resident: list[bool], types: Types
) -> dict[str, object]:
    result = walk(data)
    pages = len(resident)
    covered = live_per_page(result.live, pages)
    buckets = Counter[str]()
    sparse_pages = set()
    for page, here in enumerate(resident):
        if not here:
            continue
        share = covered[page] / PAGE
        bucket = (
            "empty" if share == 0 else "<10%" if share < 0.1 else "<25%" if share < SPARSE
            else "<50%" if share < 0.5 else ">=50%"
        )  # fmt: skip
        buckets[bucket] += 1
        if 0 < share < SPARSE:
            sparse_pages.add(page)
    on_sparse = [
        (offset, size) for offset, size in result.live
        if any(p in sparse_pages for p in range(offset // PAGE, (offset + size - 1) // PAGE + 1))
    ]  # fmt: skip
    free_bytes = sum(size for _, size in result.free)
    by_type = Counter[str]()
    for offset, size in result.live:
        by_type[types.of(offset)] += size
    return {
        "pid": pid,
        "span_mb": round((heap.end - heap.start) / 1e6, 2),
        "resident_mb": round(sum(resident) * PAGE / 1e6, 2),
        "walked_to": result.stopped_at,
        "live": {"chunks": len(result.live), "mb": round(sum(s for _, s in result.live) / 1e6, 2)},
        "free": {
            "chunks": len(result.free),
            "mb": round(free_bytes / 1e6, 2),
            "by_size": dict(Counter(size_class(s) for _, s in result.free).most_common()),
            "largest_kb": round(max((s for _, s in result.free), default=0) / 1024, 1),
        },
        "top_kb": None if result.top is None else round(result.top[1] / 1024, 1),
        "live_by_size_mb": {
            bound: round(total / 1e6, 2) for bound, total in _totals(result.live).most_common()
        },
        "live_by_type_mb": {
            name: round(total / 1e6, 2) for name, total in by_type.most_common(TOP_TYPES)
        },
        "resident_pages_by_live_share": dict(buckets.most_common()),
        "sparse_pages_held_by": {
            "sizes": dict(Counter(size_class(s) for _, s in on_sparse).most_common(12)),
            "types": dict(Counter(types.of(o) for o, _ in on_sparse).most_common(20)),
        },
        "largest_live": [
            {"offset_mb": round(o / 1e6, 2), "size": s, "type": types.of(o), "starts": types.hex(o)}
            for o, s in sorted(result.live, key=lambda chunk: -chunk[1])[:TOP_LARGEST]
        ],
        "highest_live": [
            {"offset_mb": round(o / 1e6, 2), "size": s, "type": types.of(o)}
            for o, s in result.live[-TOP_LIVE:]
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pid", type=int)
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args()
    found = report(args.pid)
    text = json.dumps(found, indent=1)
    if args.json is not None:
        args.json.write_text(text)
    sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
